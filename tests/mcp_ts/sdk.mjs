// The official TypeScript MCP SDK, both generations on npm, as the client
// scripts here load them: v1 is `@modelcontextprotocol/sdk`, v2
// `@modelcontextprotocol/client` (asked to negotiate the newest protocol it
// can). The packages (their CommonJS builds, through require) come from
// $MEMIDX_MCP_NODE_MODULES/node_modules when that is set, since an ES
// import looks only in the folders above this script; else from beside it.

import { createRequire } from "node:module";
import { join } from "node:path";

// The SDKs log with console.debug, which Node writes to stdout: stdout is
// the report's alone.
console.log = console.info = console.debug = console.error;

const modules = process.env.MEMIDX_MCP_NODE_MODULES;
const require = createRequire(modules ? join(modules, "package.json") : import.meta.url);

/** Each generation's Client, transports and default output validator, and
 *  the options its Client is made with. */
export const GENERATIONS = {
  v1: () => ({
    Client: require("@modelcontextprotocol/sdk/client/index.js").Client,
    Stdio: require("@modelcontextprotocol/sdk/client/stdio.js").StdioClientTransport,
    Http: require("@modelcontextprotocol/sdk/client/streamableHttp.js").StreamableHTTPClientTransport,
    Validator: require("@modelcontextprotocol/sdk/validation/ajv").AjvJsonSchemaValidator,
    options: {},
  }),
  v2: () => ({
    Client: require("@modelcontextprotocol/client").Client,
    Stdio: require("@modelcontextprotocol/client/stdio").StdioClientTransport,
    Http: require("@modelcontextprotocol/client").StreamableHTTPClientTransport,
    Validator: require("@modelcontextprotocol/client/validators/ajv").AjvJsonSchemaValidator,
    // Probe with server/discover; fall back to initialize if not understood.
    options: { versionNegotiation: { mode: "auto" } },
  }),
};

//! The engine's floors, checked: every `crate::…` (and `super::…`) reference
//! under `src/` points to the file's own floor or one below it, and no
//! files depend on each other in a circle. `ARCHITECTURE.md` describes the
//! floors; this test keeps the code true to it.
//!
//! References are read from the source text: comments, string literals and
//! `#[cfg(test)]` modules are left out (tests may reach anywhere), and each
//! path is resolved to the deepest module file it names. A parent module's
//! references into its own children (`pub mod x;`, `pub use x::Y`) are its
//! structure, not a dependency, and are not edges.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The floors, bottom to top: a top-level module of the library (or the
/// binary, last) and the floor it stands on.
const FLOORS: &[(&str, u8)] = &[
    ("text", 0),
    ("error", 0),
    ("progress", 0),
    ("corpus", 1),
    ("embed", 1),
    ("store", 2),
    ("lists", 3),
    ("fusion", 4),
    ("filter", 4),
    ("index", 5),
    ("retriever", 6),
    ("remote", 6),
    ("indexer", 6),
    ("eval", 6),
    ("output", 7),
    ("request", 7),
    ("cli", 8),
    ("config", 8),
    ("cmd", 8),
];

/// The floor of the binary crate's own modules (`main.rs` and what it declares).
const BINARY_FLOOR: u8 = 8;

/// A source file: its module path (`store::manifest`) and crate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Module {
    /// `true` for the binary crate's tree (`src/main.rs`).
    binary: bool,
    path: Vec<String>,
}

impl Module {
    fn name(&self) -> String {
        let root = if self.binary { "main" } else { "lib" };
        if self.path.is_empty() {
            root.to_string()
        } else {
            format!("{root}::{}", self.path.join("::"))
        }
    }

    fn floor(&self) -> Option<u8> {
        let top = self.path.first()?;
        if self.binary && !["cli", "config", "cmd"].contains(&top.as_str()) {
            return Some(BINARY_FLOOR);
        }
        FLOORS
            .iter()
            .find(|(name, _)| name == top)
            .map(|(_, floor)| *floor)
    }
}

/// Source text with comments, string and char literals blanked and
/// `#[cfg(test)]` items removed.
fn code_only(source: &str) -> String {
    let bytes: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < bytes.len() && bytes[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < bytes.len() {
                if bytes[i] == '/' && bytes.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if bytes[i] == '*' && bytes.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !ident_char(prev(&bytes, i))
        {
            // Raw string r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while bytes.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if bytes.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= bytes.len() {
                    break;
                }
                if bytes[j] == '"' && (0..hashes).all(|h| bytes.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < bytes.len() && bytes[i] != '"' {
                if bytes[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && is_char_literal(&bytes, i) {
            i += 1;
            while i < bytes.len() && bytes[i] != '\'' {
                if bytes[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    strip_test_items(&out)
}

fn prev(chars: &[char], i: usize) -> char {
    if i == 0 { ' ' } else { chars[i - 1] }
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// True when the `'` at `i` opens a char literal rather than a lifetime.
fn is_char_literal(chars: &[char], i: usize) -> bool {
    matches!(
        (chars.get(i + 1), chars.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// Removes each `#[cfg(test)]` item: up to the end of its braces or `;`.
fn strip_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        // Keep line count: blank the item but keep its newlines.
        out.extend(after[..end].chars().filter(|&c| c == '\n'));
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// One reference: the line it is on and the path it names (`crate::a::b`,
/// `super::x`, `memidx::y`), already split into segments.
#[derive(Debug)]
struct Reference {
    line: usize,
    segments: Vec<String>,
}

/// Every path starting with `crate`, `super`, `self` (in a `use`) or
/// `memidx` (the library, from the binary), with `use` groups expanded.
fn references(code: &str) -> Vec<Reference> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let mut in_use = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
        }
        if ident_char(c) && !ident_char(prev(&chars, i)) {
            let start = i;
            while i < chars.len() && ident_char(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            if word == "use" {
                in_use = true;
                continue;
            }
            let roots = ["crate", "super", "memidx"];
            let is_root = roots.contains(&word.as_str()) || (in_use && word == "self");
            if is_root && chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
                let (paths, end) = parse_tree(&chars, start);
                for segments in paths {
                    out.push(Reference { line, segments });
                }
                line += chars[i..end].iter().filter(|&&c| c == '\n').count();
                i = end;
            }
            continue;
        }
        if c == ';' {
            in_use = false;
        }
        i += 1;
    }
    out
}

/// Parses a path or use tree at `start`; returns the expanded paths and the
/// index after it.
fn parse_tree(chars: &[char], start: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    let mut i = start;
    loop {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if chars.get(i) == Some(&'{') {
            let mut paths = Vec::new();
            i += 1;
            loop {
                while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ',') {
                    i += 1;
                }
                if i >= chars.len() || chars[i] == '}' {
                    i += 1;
                    break;
                }
                let (inner, end) = parse_tree(chars, i);
                for tail in inner {
                    let mut full = prefix.clone();
                    if tail != ["self"] {
                        full.extend(tail);
                    }
                    paths.push(full);
                }
                i = end;
            }
            return (paths, i);
        }
        let seg_start = i;
        while i < chars.len() && (ident_char(chars[i]) || chars[i] == '*') {
            i += 1;
        }
        if seg_start == i {
            return (vec![prefix], i);
        }
        let segment: String = chars[seg_start..i].iter().collect();
        if segment != "*" {
            prefix.push(segment);
        }
        if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
            i += 2;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// The module files of one crate: module path → file, following `mod x;`
/// declarations from the crate root (those under `#[cfg(test)]` left out).
fn module_files(src: &Path, root_file: &str, binary: bool) -> BTreeMap<Module, PathBuf> {
    let mut files = BTreeMap::new();
    let mut pending = vec![(Vec::<String>::new(), src.join(root_file))];
    while let Some((path, file)) = pending.pop() {
        let code = code_only(&fs::read_to_string(&file).unwrap());
        let dir = if path.is_empty() || file.ends_with("mod.rs") {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        for child in declared_modules(&code) {
            let mut child_path = path.clone();
            child_path.push(child.clone());
            let flat = dir.join(format!("{child}.rs"));
            let nested = dir.join(&child).join("mod.rs");
            let child_file = if flat.is_file() { flat } else { nested };
            assert!(child_file.is_file(), "mod {child} of {}", file.display());
            pending.push((child_path, child_file));
        }
        files.insert(Module { binary, path }, file);
    }
    files
}

/// Names of the `mod x;` declarations (not inline `mod x { … }`).
fn declared_modules(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in code.lines() {
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace())
            .filter(|w| !w.is_empty())
            .collect();
        let Some(at) = words.iter().position(|w| *w == "mod") else {
            continue;
        };
        if let Some(name) = words.get(at + 1).and_then(|w| w.strip_suffix(';')) {
            out.push(name.to_string());
        }
    }
    out
}

/// The module a reference from `from` lands in: the deepest module file
/// that a prefix of its resolved path names.
fn resolve(
    from: &Module,
    segments: &[String],
    modules: &BTreeMap<Module, PathBuf>,
) -> Option<Module> {
    let (binary, mut path, rest) = match segments.first()?.as_str() {
        "crate" => (from.binary, Vec::new(), &segments[1..]),
        "memidx" => (false, Vec::new(), &segments[1..]),
        "self" => (from.binary, from.path.clone(), &segments[1..]),
        "super" => {
            // `super` from `a::b` (`a/b.rs`) is `a`; from `a` (`a/mod.rs`), the root.
            let mut base = from.path.clone();
            let mut rest = segments;
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
            (from.binary, base, rest)
        }
        _ => return None,
    };
    let mut best = Module {
        binary,
        path: path.clone(),
    };
    for segment in rest {
        path.push(segment.clone());
        let candidate = Module {
            binary,
            path: path.clone(),
        };
        if modules.contains_key(&candidate) {
            best = candidate;
        } else {
            break;
        }
    }
    Some(best)
}

/// Every problem in the tree under `src`: upward references and circles.
fn problems(src: &Path) -> Vec<String> {
    let mut modules = module_files(src, "lib.rs", false);
    modules.extend(module_files(src, "main.rs", true));
    let mut problems = Vec::new();
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, file) in &modules {
        let code = code_only(&fs::read_to_string(file).unwrap());
        let Some(floor) = module.floor().or(module.path.is_empty().then_some(u8::MAX)) else {
            problems.push(format!(
                "{}: module {} has no floor; add it to FLOORS and ARCHITECTURE.md",
                file.display(),
                module.name()
            ));
            continue;
        };
        for reference in references(&code) {
            let Some(target) = resolve(module, &reference.segments, &modules) else {
                continue;
            };
            if target == *module
                || target.path.starts_with(&module.path) && target.binary == module.binary
            {
                continue;
            }
            if let Some(to_floor) = target.floor()
                && to_floor > floor
            {
                problems.push(format!(
                    "{} -> {} ({}:{}: `{}` reaches from floor {floor} up to floor {to_floor})",
                    relative(src, file),
                    relative(src, &modules[&target]),
                    relative(src, file),
                    reference.line,
                    reference.segments.join("::"),
                ));
            }
            edges.entry(module.clone()).or_default().insert(target);
        }
    }
    problems.extend(printer_and_engine_rules(src, &modules));
    // One problem per pair of files: the first reference names it.
    let mut seen = BTreeSet::new();
    problems.retain(|p| seen.insert(key(p)));
    for cycle in cycles(&edges) {
        let files: Vec<String> = cycle.iter().map(|m| relative(src, &modules[m])).collect();
        problems.push(format!("cycle: {}", files.join(", ")));
    }
    problems
}

/// Words a printer (`output/`) must not use: it renders what it is given
/// and reads no disk.
const PRINTER_MUST_NOT: &[&str] = &["std::fs", "Generation", "Manifest", "corpus::walk"];

/// Words a command (`cmd/` in the binary) must not use: it turns settings
/// into an engine call and hands the result to a printer, nothing more.
const COMMAND_MUST_NOT: &[&str] = &["std::fs", "Manifest", "Generation"];

/// Words the engine (everything below `output/` and the binary) must not
/// use: it never prints; progress goes through the `Progress` trait.
const ENGINE_MUST_NOT: &[&str] = &[
    "indicatif",
    "println!",
    "eprintln!",
    "print!",
    "eprint!",
    "crate::output",
];

/// The printers read no disk, the commands stay thin and the engine never
/// prints: each use of a forbidden word, as `file: word` (with its first line).
fn printer_and_engine_rules(src: &Path, modules: &BTreeMap<Module, PathBuf>) -> Vec<String> {
    let mut problems = Vec::new();
    for (module, file) in modules {
        let top = module.path.first().map(String::as_str);
        let (forbidden, rule) = match top {
            Some("output") => (PRINTER_MUST_NOT, "a printer reads no disk"),
            Some("cmd") if module.binary => (COMMAND_MUST_NOT, "a command stays thin"),
            _ if module.binary || module.floor().is_none_or(|f| f >= 7) => continue,
            _ => (ENGINE_MUST_NOT, "the engine never prints"),
        };
        let code = code_only(&fs::read_to_string(file).unwrap());
        for word in forbidden {
            let line = code.lines().position(|l| contains_word(l, word));
            if let Some(line) = line {
                problems.push(format!(
                    "{}: {word} ({}:{}: {})",
                    relative(src, file),
                    relative(src, file),
                    line + 1,
                    rule
                ));
            }
        }
    }
    problems
}

/// True when `line` holds `word` not as part of a longer identifier.
fn contains_word(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back().unwrap_or(' ');
        let after = line[at + word.len()..].chars().next().unwrap_or(' ');
        !ident_char(before) && !ident_char(after)
    })
}

fn relative(src: &Path, file: &Path) -> String {
    file.strip_prefix(src)
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/")
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        out: Vec<Vec<Module>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Module) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !state.index.contains_key(v) {
            visit(&mut state, v);
        }
    }
    state.out.sort();
    state.out
}

/// A problem without its details: `from -> to`, or the cycle.
fn key(problem: &str) -> String {
    problem.split(" (").next().unwrap_or_default().to_string()
}

#[test]
fn every_reference_points_down_the_floors_and_no_files_form_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = problems(&src);
    assert!(
        found.is_empty(),
        "{} problems:\n{}",
        found.len(),
        found
            .iter()
            .map(|p| format!("  {p}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_checker_finds_an_upward_reference_and_a_circle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    fs::create_dir_all(src.join("store")).unwrap();
    fs::write(
        src.join("lib.rs"),
        "pub mod store;\npub mod lists;\npub mod text;\n",
    )
    .unwrap();
    fs::write(src.join("main.rs"), "fn main() {}\n").unwrap();
    fs::write(
        src.join("store/mod.rs"),
        "//! use crate::lists;\npub mod a;\npub mod b;\nuse crate::lists::Thing; // up\nconst S: &str = \"crate::lists\";\n",
    )
    .unwrap();
    fs::write(src.join("store/a.rs"), "use super::b::X;\npub struct Y;\n").unwrap();
    fs::write(src.join("store/b.rs"), "use crate::{text, store::a::Y};\npub struct X;\n#[cfg(test)]\nmod tests { use crate::lists::Z; }\n").unwrap();
    fs::write(src.join("lists.rs"), "use crate::store::a::Y;\n").unwrap();
    fs::write(src.join("text.rs"), "\n").unwrap();
    assert_eq!(
        problems(src),
        [
            "store/mod.rs -> lists.rs (store/mod.rs:4: `crate::lists::Thing` reaches from floor 2 up to floor 3)",
            "cycle: store/a.rs, store/b.rs",
        ]
    );
}

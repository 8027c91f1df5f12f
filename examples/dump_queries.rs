use std::io::{BufRead, Write};
fn main() {
    let e = memidx::embed::load(None).unwrap();
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let v = e.embed(&[line.unwrap()]).unwrap();
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        out.write_all(&bytes).unwrap();
    }
}

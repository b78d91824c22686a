//! The node's rooms import downward only: each top-level module of
//! `node/src` has a floor, and a `crate::ROOM` path in a room's source must
//! name a room on a lower floor. That is what keeps the node free of import
//! circles (ARCHITECTURE.md, "The node's rooms"). A new module gets a floor
//! here or this test names it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The floors, from the top: a room may use the rooms below it.
const FLOORS: &[(&str, u32)] = &[
    ("server", 11),
    ("api", 10),
    ("monitors", 9),
    ("work", 9),
    ("conversations", 8),
    ("supervise", 7),
    ("tokens", 7),
    ("secrets", 7),
    ("config", 7),
    ("mail", 6),
    ("spend", 5),
    ("egress", 5),
    ("tools", 5),
    ("fleet", 5),
    ("push", 5),
    ("service", 4),
    ("live", 3),
    ("workspace", 3),
    ("idempotent", 3),
    ("outbound", 3),
    ("transcript", 2),
    ("console", 1),
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("node/src is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`api/routing/plan.rs` -> `api`).
fn room_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a component");
    first.as_os_str().to_string_lossy().trim_end_matches(".rs").to_string()
}

/// Every room a file names with `crate::ROOM`, outside comments.
fn named_rooms(text: &str) -> Vec<String> {
    let mut out = vec![];
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let before = &rest[..at];
            let after = &rest[at + "crate::".len()..];
            // `node_store::x` or `$crate::` are not this crate's rooms.
            let foreign = before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$');
            let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !foreign && !name.is_empty() {
                out.push(name);
            }
            rest = after;
        }
        // `use crate::{a, b}` names several rooms at once.
        if let Some(at) = code.find("crate::{") {
            let inner = &code[at + "crate::{".len()..];
            for part in inner.split(['}', ',']) {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        }
    }
    out
}

#[test]
fn the_node_imports_downward_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let floors: BTreeMap<&str, u32> = FLOORS.iter().copied().collect();
    let mut files = vec![];
    sources(&src, &mut files);
    assert!(
        files.len() > 50,
        "node/src holds {} files: is this the node?",
        files.len()
    );
    let mut wrong = vec![];
    for file in &files {
        let room = room_of(&src, file);
        if room == "lib" {
            continue;
        }
        let Some(&floor) = floors.get(room.as_str()) else {
            wrong.push(format!("{}: room {room:?} has no floor in this test", file.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("a source file");
        for named in named_rooms(&text) {
            if named == room {
                continue;
            }
            match floors.get(named.as_str()) {
                Some(&f) if f < floor => {}
                Some(&f) => wrong.push(format!(
                    "{}: {room} (floor {floor}) uses crate::{named} (floor {f})",
                    file.strip_prefix(&src).unwrap_or(file).display()
                )),
                // Not a room of the node (a re-export of lib.rs, a macro).
                None => {}
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that do not run downward:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_scan_sees_single_and_grouped_imports() {
    let text = "use crate::live::Live;\nuse crate::{fleet, spend::Spend};\nuse node_store::catalog;\n// crate::server in a comment\n";
    assert_eq!(named_rooms(text), ["live", "fleet", "spend"]);
}

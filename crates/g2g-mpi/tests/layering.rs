//! The replay keeps its layers (issue 22): the driver (`sim.rs`, `setup.rs`) over the operations
//! (`ops/`) over the models (`model/`), with the replay's data in `state.rs` and leaves every layer
//! may use.  Read from the source tree: which `crate::` modules each file names, who runs a rank
//! (`step`), that the modules' `use` graph has no cycle (here and in every crate of the workspace),
//! and the files' sizes.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under g2g-mpi's src/, by its module path relative to src/ ("ops/p2p", "sim", ...).
fn sources() -> BTreeMap<String, String> {
    let base = src_dir();
    let out = sources_in(&base);
    assert!(out.len() > 10, "the source tree was not found at {}", base.display());
    out
}

/// Every `.rs` file under `base`, by its module path relative to it.
fn sources_in(base: &Path) -> BTreeMap<String, String> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(base).unwrap().with_extension("");
                out.insert(rel.to_string_lossy().replace('\\', "/"), std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(base, base, &mut out);
    out
}

/// The code of a file without comments and its `#[cfg(test)]` module (tests may reach anywhere).
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines().map(|l| l.split("//").next().unwrap()).collect::<Vec<_>>().join("\n")
}

/// The crate modules a file names: `crate::a::b` gives "a" (and "a/b" when a/b is a file), for
/// every path in `use` lines and code; grouped imports `crate::{a, b::c}` too.
fn named_modules(code: &str, files: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut push = |path: &str| {
        let parts: Vec<&str> = path.split("::").map(|s| s.trim()).filter(|s| !s.is_empty()).collect();
        if let Some(first) = parts.first() {
            // a name that is no module is an item of the crate root (`crate::Mode`): "lib"
            let is_module = files.contains(*first) || files.iter().any(|f| f.starts_with(&format!("{first}/")));
            out.insert(if is_module { first.to_string() } else { "lib".to_string() });
            if parts.len() > 1 && files.contains(&format!("{}/{}", parts[0], parts[1])) {
                out.insert(format!("{}/{}", parts[0], parts[1]));
            }
        }
    };
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                push(item);
            }
        } else {
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
            push(&rest[..end]);
        }
    }
    out
}

fn layer_of(module: &str) -> &'static str {
    match module.split('/').next().unwrap() {
        "model" => "model",
        "ops" => "ops",
        "sim" | "setup" | "lib" | "bin" => "driver",
        "state" => "state",
        _ => "leaf",
    }
}

#[test]
fn models_never_reach_the_operations_or_the_driver() {
    let src = sources();
    let files: BTreeSet<String> = src.keys().cloned().collect();
    let mut bad = vec![];
    for (file, text) in &src {
        let code = code(text);
        let named = named_modules(&code, &files);
        let allowed: &[&str] = match layer_of(file) {
            "model" => &["event", "options", "model"],
            "ops" => &["event", "options", "model", "ops", "state", "stats", "report", "timeline"],
            "state" => &["event", "options", "model", "stats", "timeline"],
            "leaf" => &["report", "options"],
            _ => continue,
        };
        for m in &named {
            let top = m.split('/').next().unwrap();
            if !allowed.contains(&top) {
                bad.push(format!("{file}.rs names crate::{top}"));
            }
        }
        if layer_of(file) == "model" {
            for word in ["State", "Sim<", "self.ranks", "self.q."] {
                if code.contains(word) {
                    bad.push(format!("{file}.rs mentions `{word}`: a model owns its state and returns outcomes"));
                }
            }
        }
    }
    assert!(bad.is_empty(), "layering broken:\n  {}", bad.join("\n  "));
}

#[test]
fn only_the_driver_runs_a_rank() {
    let src = sources();
    let mut callers = vec![];
    for (file, text) in &src {
        let code = code(text);
        if code.contains(".step(") || code.contains("fn step(") || code.contains(".exec(") || code.contains("fn exec(")
        {
            callers.push(file.clone());
        }
    }
    assert_eq!(callers, vec!["sim".to_string()], "step/exec appear outside sim.rs");
}

/// The `use` graph between the files of one crate: file -> the files it names (a module named by
/// its directory stands for its mod.rs).  A parent declaring its children (`mod x;`, re-exports from
/// lib.rs or a mod.rs) is not a use: the crate root's edges and a mod.rs's edges to its own
/// children are left out.
fn import_edges(src: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let files: BTreeSet<String> = src.keys().cloned().collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in src {
        let mut to = BTreeSet::new();
        let own_children = file.strip_suffix("/mod").map(|dir| format!("{dir}/"));
        for m in named_modules(&code(text), &files) {
            let target = if files.contains(&m) {
                m
            } else if files.contains(&format!("{m}/mod")) {
                format!("{m}/mod")
            } else {
                continue;
            };
            let is_child = own_children.as_ref().is_some_and(|dir| target.starts_with(dir.as_str()));
            if &target != file && file != "lib" && !is_child {
                to.insert(target);
            }
        }
        edges.insert(file.clone(), to);
    }
    edges
}

/// The first cycle of the graph, as the files along it (the first repeated at the end).
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let i = path.iter().position(|p| p == n).unwrap();
                let mut cyc = path[i..].to_vec();
                cyc.push(n.to_string());
                return Some(cyc);
            }
            _ => {}
        }
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    edges.keys().find_map(|n| visit(n, edges, &mut state, &mut vec![]))
}

#[test]
fn module_imports_have_no_cycle() {
    let edges = import_edges(&sources());
    if let Some(c) = find_cycle(&edges) {
        panic!("import cycle: {}", c.join(" -> "));
    }
    assert!(edges["ops/collective"].contains("ops/p2p"), "the graph is read (collectives post messages through p2p)");
    assert!(edges["model/protocol"].contains("model/matching"));
}

#[test]
fn no_crate_of_the_workspace_has_an_import_cycle() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let mut seen = vec![];
    for e in std::fs::read_dir(&crates).unwrap() {
        let src = e.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        let name = src.parent().unwrap().file_name().unwrap().to_string_lossy().to_string();
        let edges = import_edges(&sources_in(&src));
        if let Some(c) = find_cycle(&edges) {
            panic!("import cycle in crates/{name}/src: {}", c.join(" -> "));
        }
        if name == "g2g-net" {
            // the graph is read: config.rs reads the schema, never the other way round
            assert!(edges["config"].contains("schema") && !edges["schema"].contains("config"));
            assert!(edges["paths/mod"].contains("machine"));
        }
        seen.push(name);
    }
    for want in ["g2g-mpi", "g2g-net", "g2g-trace", "g2g-coll"] {
        assert!(seen.iter().any(|n| n == want), "crates/{want} not found under {}", crates.display());
    }
}

#[test]
fn no_file_is_a_room_of_its_own() {
    let mut big = vec![];
    for (file, text) in sources() {
        let n = text.lines().count();
        if n > 600 {
            big.push(format!("{file}.rs: {n} lines"));
        }
    }
    assert!(big.is_empty(), "split these files by concern (at most ~600 lines each): {}", big.join(", "));
}

#[test]
fn the_checks_see_what_they_check() {
    // the parser finds the names a file uses, grouped or not, and ignores comments and tests
    let files: BTreeSet<String> = ["model/world", "ops/p2p", "event"].iter().map(|s| s.to_string()).collect();
    let c = code("use crate::{event::Ev, ops::p2p::SendSpec};\n// crate::sim\nfn f() { crate::model::world::endpoint(); }\nuse crate::Mode;\n#[cfg(test)]\nuse crate::state;");
    let got = named_modules(&c, &files);
    let want: BTreeSet<String> =
        ["event", "ops", "ops/p2p", "model", "model/world", "lib"].iter().map(|s| s.to_string()).collect();
    assert_eq!(got, want);
}

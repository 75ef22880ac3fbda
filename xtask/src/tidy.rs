//! The dependency-direction check: every dependency between workspace crates must be an edge
//! listed in docs/ARCHITECTURE.md, and every workspace crate must be listed there.
//!
//! The allowed edges are read from the fenced block that follows the heading
//! `## Dependency direction`, one crate a line: `agent-react -> hook-core, llm` (a crate with no
//! internal dependencies is written `hook-core ->`). Only normal and build dependencies count:
//! dev-dependencies may reach further (integration tests wire real parts together).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Checks the workspace at `root`; returns one line per problem.
pub fn check(root: &Path) -> Result<(), Vec<String>> {
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md"))
        .map_err(|e| vec![format!("cannot read docs/ARCHITECTURE.md: {e}")])?;
    let allowed = parse_allowed(&doc).map_err(|e| vec![e])?;
    let actual = workspace_graph(root).map_err(|e| vec![e])?;
    compare(&allowed, &actual)
}

/// Parses the allowed edges from the architecture document.
pub fn parse_allowed(doc: &str) -> Result<Graph, String> {
    let after_heading = doc
        .split_once("## Dependency direction")
        .ok_or("docs/ARCHITECTURE.md has no `## Dependency direction` section")?
        .1;
    let block = after_heading.split_once("```").ok_or("the dependency section has no fenced block")?.1;
    let block = block.split_once('\n').map(|(_, rest)| rest).unwrap_or(block);
    let block = block.split_once("```").ok_or("the dependency block is not closed")?.0;
    let mut graph = Graph::new();
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (from, to) = line.split_once("->").ok_or_else(|| format!("not an edge line: `{line}`"))?;
        let targets = to.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned);
        graph.entry(from.trim().to_owned()).or_default().extend(targets);
    }
    Ok(graph)
}

/// Compares the workspace's internal dependencies with the allowed edges.
pub fn compare(allowed: &Graph, actual: &Graph) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    for (krate, deps) in actual {
        let Some(ok) = allowed.get(krate) else {
            problems.push(format!("crate `{krate}` is not listed in docs/ARCHITECTURE.md's dependency direction"));
            continue;
        };
        for dep in deps.difference(ok) {
            problems.push(format!(
                "`{krate}` depends on `{dep}`, against the direction in docs/ARCHITECTURE.md \
                 (allowed: {})",
                if ok.is_empty() { "none".to_owned() } else { ok.iter().cloned().collect::<Vec<_>>().join(", ") }
            ));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems) }
}

/// The workspace's internal (path) dependencies, normal and build kinds, from `cargo metadata`.
fn workspace_graph(root: &Path) -> Result<Graph, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(root)
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| format!("cargo metadata: {e}"))?;
    let packages = metadata["packages"].as_array().ok_or("cargo metadata: no packages")?;
    let members: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut graph = Graph::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default().to_owned();
        let deps = graph.entry(name).or_default();
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let dev = dep["kind"].as_str() == Some("dev");
            let dep_name = dep["name"].as_str().unwrap_or_default();
            if !dev && dep["path"].is_string() && members.contains(dep_name) {
                deps.insert(dep_name.to_owned());
            }
        }
    }
    Ok(graph)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> Graph {
        edges.iter().map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect())).collect()
    }

    const DOC: &str = "# A\n\n## Dependency direction\n\n```text\n# comment\nhook-core ->\nagent-react -> hook-core, llm\nllm ->\n```\n";

    #[test]
    fn parses_the_fenced_block() {
        assert_eq!(
            parse_allowed(DOC).unwrap(),
            graph(&[("hook-core", &[]), ("agent-react", &["hook-core", "llm"]), ("llm", &[])])
        );
    }

    #[test]
    fn an_edge_against_the_direction_fails() {
        let allowed = parse_allowed(DOC).unwrap();
        let bad = graph(&[("hook-core", &["agent-react"]), ("agent-react", &["hook-core"]), ("llm", &[])]);
        let problems = compare(&allowed, &bad).unwrap_err();
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("`hook-core` depends on `agent-react`"), "{problems:?}");
    }

    #[test]
    fn an_unlisted_crate_fails() {
        let allowed = parse_allowed(DOC).unwrap();
        let problems = compare(&allowed, &graph(&[("rogue", &[])])).unwrap_err();
        assert!(problems[0].contains("`rogue` is not listed"));
    }

    /// The real workspace follows docs/ARCHITECTURE.md.
    #[test]
    fn workspace_follows_the_documented_direction() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        if let Err(problems) = check(root) {
            panic!("dependency direction violated:\n{}", problems.join("\n"));
        }
    }
}

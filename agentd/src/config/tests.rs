//! Unit tests of `config.rs`.

use super::*;

#[test]
fn a_full_file_parses_and_typos_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agentd.toml");
    std::fs::write(
            &path,
            "runtime = \"docker\"\nmax_iterations = 7\n[docker]\nnetwork = \"none\"\nmemory = \"1g\"\n[remote]\nurl = \"http://x:1\"\n",
        )
        .unwrap();
    let config = FileConfig::load(&path).unwrap();
    assert_eq!(config.runtime, Some(RuntimeKind::Docker));
    assert_eq!(config.max_iterations, Some(7));
    assert_eq!(config.docker.network, Some(Network::None));
    assert_eq!(config.remote.url.as_deref(), Some("http://x:1"));

    std::fs::write(
            &path,
            "[serve]\napi_keys = [\"a\", \"b\"]\npool_size = 3\nimages = { \"ghcr.io/x:1\" = \"local:1\" }\n",
        )
        .unwrap();
    let config = FileConfig::load(&path).unwrap();
    assert_eq!(config.serve.api_keys, ["a", "b"]);
    assert_eq!(config.serve.pool_size, Some(3));
    assert_eq!(config.serve.images["ghcr.io/x:1"], "local:1");

    std::fs::write(
            &path,
            "[llm]\nmodel = \"m\"\n[condenser]\ntype = \"recent\"\nmax_events = 50\n[agent]\nipython = false\n",
        )
        .unwrap();
    let config = FileConfig::load(&path).unwrap();
    assert_eq!(config.llm.unwrap().model, "m");
    assert!(matches!(
        config.condenser,
        Some(CondenserConfig::Recent { max_events: 50, .. })
    ));
    assert_eq!(config.agent.ipython, Some(false));

    std::fs::write(&path, "max_iteration = 7\n").unwrap();
    let err = FileConfig::load(&path).unwrap_err().to_string();
    assert!(err.contains("max_iteration"), "{err}");
}

#[test]
fn session_ids_are_distinct() {
    assert_ne!(new_session_id(), new_session_id());
}

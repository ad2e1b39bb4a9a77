//! Unit tests of `config.rs`.

use super::*;

/// Loads a settings file holding `text`.
fn load(text: &str) -> Result<FileConfig, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agentd.toml");
    std::fs::write(&path, text).unwrap();
    FileConfig::load(&path)
}

#[test]
fn a_full_file_parses_and_typos_are_errors() {
    let config = load(
        "runtime = \"docker\"\nmax_iterations = 7\n\
         [docker]\nnetwork = \"none\"\nmemory = \"1g\"\n\
         [remote]\nurl = \"http://x:1\"\n",
    )
    .unwrap();
    assert_eq!(config.runtime, Some(RuntimeKind::Docker));
    assert_eq!(config.max_iterations, Some(7));
    assert_eq!(config.docker.network, Some(Network::None));
    assert_eq!(config.remote.url.as_deref(), Some("http://x:1"));

    let config = load(
        "[serve]\napi_keys = [\"a\", \"b\"]\npool_size = 3\n\
         images = { \"ghcr.io/x:1\" = \"local:1\" }\n",
    )
    .unwrap();
    assert_eq!(config.serve.api_keys, ["a", "b"]);
    assert_eq!(config.serve.pool_size, Some(3));
    assert_eq!(config.serve.images["ghcr.io/x:1"], "local:1");

    let config = load(
        "[llm]\nmodel = \"m\"\n\
         [condenser]\ntype = \"recent\"\nmax_events = 50\n\
         [agent]\nipython = false\n",
    )
    .unwrap();
    assert_eq!(config.llm.unwrap().model, "m");
    assert!(matches!(
        config.condenser,
        Some(CondenserConfig::Recent { max_events: 50, .. })
    ));
    assert_eq!(config.agent.ipython, Some(false));

    let err = load("max_iteration = 7\n").unwrap_err().to_string();
    assert!(err.contains("max_iteration"), "{err}");
}

#[test]
fn session_ids_are_distinct() {
    assert_ne!(new_session_id().unwrap(), new_session_id().unwrap());
}

#[test]
fn egress_settings_with_domains_pins_and_per_key_and_image_policies_parse() {
    let config = load(
        "[docker]\negress = [\"web.test:8080\", \"*.pypi.org:443\", \"10.0.0.0/8\"]\n\
         egress_hosts = { \"web.test\" = \"10.0.0.5\" }\n\
         [serve]\napi_keys = [\"k\"]\negress_keys = { \"k\" = \"none\" }\n\
         egress_images = { \"img:1\" = \"pypi.org:443\" }\n",
    )
    .unwrap();
    let egress = config.docker.egress.unwrap().policy().unwrap();
    assert_eq!(
        egress.to_string(),
        "web.test:8080,*.pypi.org:443,10.0.0.0/8"
    );
    assert_eq!(egress.domains().len(), 2);
    assert_eq!(
        config.docker.egress_hosts.unwrap()["web.test"],
        std::net::Ipv4Addr::new(10, 0, 0, 5)
    );
    assert_eq!(
        config.serve.egress_keys["k"].policy().unwrap(),
        crate::runtime::docker::Egress::Deny
    );
    assert_eq!(
        config.serve.egress_images["img:1"]
            .policy()
            .unwrap()
            .to_string(),
        "pypi.org:443"
    );
    // A bad domain is an error that names it.
    let bad = EgressSetting::List(vec!["*.com".to_string()])
        .policy()
        .unwrap_err();
    assert!(bad.contains("*.com") && bad.contains("top-level"), "{bad}");
}

use super::super::microagent::Kind;
use super::super::trigger::first_match;
use super::microagents;

#[test]
fn every_built_in_microagent_parses_and_is_triggered_by_its_topic() {
    let agents = microagents().unwrap();
    let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "code-review",
            "docker",
            "git",
            "github",
            "gitlab",
            "npm",
            "pip",
            "security",
            "ssh"
        ]
    );
    for agent in &agents {
        assert!(
            matches!(agent.kind, Kind::Knowledge),
            "{} is not a knowledge microagent",
            agent.name
        );
        assert!(!agent.content.trim().is_empty(), "{} is empty", agent.name);
        assert!(!agent.content.starts_with("---"), "{}", agent.name);
    }
    let fired = |message: &str| -> Vec<&str> {
        agents
            .iter()
            .filter(|a| first_match(&a.triggers, message).is_some())
            .map(|a| a.name.as_str())
            .collect()
    };
    assert_eq!(fired("Open a pull request on GitHub"), ["github"]);
    assert_eq!(fired("commit the fix with git"), ["git"]);
    assert_eq!(fired("count every digit"), Vec::<&str>::new());
    assert_eq!(fired("pip install requests in a venv"), ["pip"]);
    assert_eq!(fired("please /codereview my branch"), ["code-review"]);
    assert_eq!(fired("build the Docker image"), ["docker"]);
}

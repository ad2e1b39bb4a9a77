use super::{RepoOrigin, Repository, WorkspaceSpec, authenticated_url};

fn env(name: &str) -> Option<String> {
    match name {
        "GITHUB_TOKEN" => Some("ghp_abcdef".into()),
        "MY_TOKEN" => Some("mine-1234".into()),
        _ => None,
    }
}

#[test]
fn owner_slash_name_is_a_github_clone_with_the_github_token() {
    let repo = Repository::clone_of("acme/widgets", None, None, None, env).unwrap();
    assert_eq!(repo.name, "acme/widgets");
    assert_eq!(repo.directory(), "widgets");
    let RepoOrigin::Clone { url, token, branch } = &repo.origin else {
        panic!("{repo:?}")
    };
    assert_eq!(url, "https://github.com/acme/widgets.git");
    assert_eq!(branch, &None);
    let token = token.as_ref().unwrap();
    assert_eq!(
        (token.name.as_str(), token.value.as_str()),
        ("GITHUB_TOKEN", "ghp_abcdef")
    );
    let spec = WorkspaceSpec {
        repository: Some(repo.clone()),
        ..WorkspaceSpec::default()
    };
    assert_eq!(spec.all_secrets().len(), 1);
}

#[test]
fn urls_name_the_repository_by_their_last_two_segments() {
    let repo = Repository::clone_of(
        "http://127.0.0.1:8080/team/tool.git/",
        None,
        Some("dev".into()),
        Some("MY_TOKEN"),
        env,
    )
    .unwrap();
    assert_eq!(repo.name, "team/tool");
    let RepoOrigin::Clone { token, branch, .. } = &repo.origin else {
        panic!()
    };
    assert_eq!(token.as_ref().unwrap().value, "mine-1234");
    assert_eq!(branch.as_deref(), Some("dev"));
    let local = Repository::clone_of("file:///srv/git/solo.git", None, None, None, env).unwrap();
    assert_eq!(
        (local.name.as_str(), local.directory()),
        ("git/solo", "solo".to_string())
    );
    let RepoOrigin::Clone { token, .. } = &local.origin else {
        panic!()
    };
    assert!(token.is_none());
    for bad in [
        "",
        "justone",
        "a/b/c",
        "../x",
        "ftp://host/a/b",
        "a b/c",
        "https://host/",
    ] {
        assert!(
            Repository::clone_of(bad, None, None, None, env).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn the_token_goes_into_the_user_part_of_http_urls_only() {
    assert_eq!(
        authenticated_url("https://github.com/a/b.git", "T"),
        "https://x-access-token:T@github.com/a/b.git"
    );
    assert_eq!(
        authenticated_url("https://gitlab.com/a/b.git", "T"),
        "https://oauth2:T@gitlab.com/a/b.git"
    );
    assert_eq!(
        authenticated_url("https://old@bitbucket.org/a/b.git", "T"),
        "https://x-token-auth:T@bitbucket.org/a/b.git"
    );
    assert_eq!(
        authenticated_url("file:///srv/a.git", "T"),
        "file:///srv/a.git"
    );
    assert_eq!(
        authenticated_url("ssh://git@host/a.git", "T"),
        "ssh://git@host/a.git"
    );
}

//! `ttfx run` as a real process: what it prints before any browser starts.

#![allow(clippy::unwrap_used)]

use std::process::Command;

#[test]
fn a_password_in_a_target_url_never_reaches_stderr() {
    let url = "http://alice:s3cret@127.0.0.1:9/v1/chat/completions";
    let page = "http://alice:s3cret@127.0.0.1:9/chat";
    // Each is refused naming the target, as a person needs to find it: without the userinfo.
    for (args, named) in [
        (
            vec!["run", "--target", url, "--against", url],
            "`http://127.0.0.1:9/v1/chat/completions`",
        ),
        (
            vec!["run", "--url", page, "--against", page],
            "`http://127.0.0.1:9/chat`",
        ),
        (
            vec!["run", "--target", "ftp://alice:s3cret@h/"],
            "`ftp://h/`",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ttfx"))
            .args(&args)
            .env_remove("CHROMEDRIVER")
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(named), "{args:?}: {stderr}");
        for text in [&stdout, &stderr] {
            assert!(
                !text.contains("s3cret") && !text.contains("alice"),
                "{args:?}: {text}"
            );
        }
    }
}

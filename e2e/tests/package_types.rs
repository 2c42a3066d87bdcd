//! The probe package's TypeScript types, checked the way an app's build checks them:
//! `tsc --strict` compiles `e2e/types/` (the README's use of both builds, and misuse
//! marked `@ts-expect-error`) against the package installed as `node_modules/ttfx-probe`,
//! so package.json's `exports` and `types` are resolved as a bundler would.

use std::path::Path;
use std::process::{Command, Output};

use ttfx_e2e::paths;
use ttfx_e2e::site::copy_dir;

/// An app folder: the package under node_modules, the typed use next to it.
fn app(dir: &Path) -> anyhow::Result<()> {
    copy_dir(&paths::probe_pkg()?, &dir.join("node_modules/ttfx-probe"))?;
    copy_dir(&paths::workspace_root().join("e2e/types"), dir)?;
    Ok(())
}

fn tsc(dir: &Path) -> anyhow::Result<Output> {
    Ok(Command::new("node")
        .arg(paths::tsc()?)
        .args(["-p", "."])
        .current_dir(dir)
        .output()?)
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn both_builds_type_check_strictly_and_reject_misuse() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("ttfx-types-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    app(&dir)?;
    let out = tsc(&dir)?;
    let result = if out.status.success() {
        // The misuse lines count only if tsc flags an unneeded `@ts-expect-error`: give
        // the text app the voice build and its "no voice API" line must fail.
        let text_app = dir.join("text.ts");
        let source = std::fs::read_to_string(&text_app)?;
        std::fs::write(
            &text_app,
            source.replace("from \"ttfx-probe\"", "from \"ttfx-probe/voice\""),
        )?;
        let wrong = tsc(&dir)?;
        let report = text(&wrong);
        if wrong.status.success() || !report.contains("TS2578") {
            Err(anyhow::anyhow!(
                "tsc did not flag the unused @ts-expect-error with voice types in the text \
                 build:\n{report}"
            ))
        } else {
            Ok(())
        }
    } else {
        Err(anyhow::anyhow!("tsc --strict failed:\n{}", text(&out)))
    };
    let _ = std::fs::remove_dir_all(&dir);
    result
}

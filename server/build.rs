//! Build script: names the commit the server is built from, for
//! `jumpgate_build_info` and `jumpgate --version`.
//!
//! `JUMPGATE_BUILD_COMMIT` wins (an image built without `.git` sets it);
//! otherwise `git rev-parse HEAD` is asked (the commit checked out; changes
//! not committed are not shown); without either, "unknown".

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    println!("cargo:rerun-if-env-changed=JUMPGATE_BUILD_COMMIT");
    let commit = std::env::var("JUMPGATE_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    // A new commit or checkout moves HEAD or the branch it names.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{branch}");
        }
        println!("cargo:rerun-if-changed={dir}/packed-refs");
    }
    println!("cargo:rustc-env=JUMPGATE_BUILD_COMMIT={commit}");
}

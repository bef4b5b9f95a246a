//! `mecha mcp login NAME` and `mecha mcp logout NAME`: an OAuth login to a
//! remote server, kept under `$MECHA_HOME/credentials`.

use std::io::BufRead;
use std::path::PathBuf;
use std::time::Duration;

use crate::Failure;
use crate::config::Settings;
use crate::output::{self, outln};
use crate::terminal::printable;

/// How long the login waits for the browser to come back.
const BROWSER_WAIT: Duration = Duration::from_secs(300);

/// Where remote servers' logins are kept.
pub fn credentials_dir() -> Result<PathBuf, Failure> {
    Ok(crate::config::mecha_home()?.join("credentials"))
}

pub fn login(settings: &Settings, name: &str, open_browser: bool) -> Result<u8, Failure> {
    let server = crate::commands::mcp::configured(settings, name)?;
    let dir = credentials_dir()?;
    let runtime = crate::runtime()?;
    runtime.block_on(async {
        let login = mecha_mcp::Login::start(&server.config, &dir)
            .await
            .map_err(Failure::Usage)?;
        let url = login.authorization_url().to_owned();
        outln!(
            "To log in to `{name}`, open this address in a browser:\n\n  {}\n",
            printable(&url)
        );
        outln!(
            "Waiting up to {} min for the browser to come back to {}. On a machine without a \
             browser, open the address on another one and paste here the address it ends on \
             (that page will not load).",
            BROWSER_WAIT.as_secs() / 60,
            login.redirect_uri()
        );
        if open_browser {
            open_in_browser(&url);
        }
        let pasted = pasted_line();
        let state = login
            .finish(pasted, BROWSER_WAIT)
            .await
            .map_err(|e| Failure::Run(anyhow::anyhow!(e)))?;
        outln!(
            "logged in to `{name}`: {state}; kept in {}",
            mecha_mcp::credentials_file(&dir, name).display()
        );
        Ok(0)
    })
}

pub fn logout(name: &str) -> Result<u8, Failure> {
    let dir = credentials_dir()?;
    match mecha_mcp::logout(name, &dir).map_err(|e| Failure::Run(anyhow::anyhow!(e)))? {
        true => outln!("logged out of `{name}`: its tokens are removed"),
        false => outln!("no login kept for `{name}`; nothing to remove"),
    }
    Ok(0)
}

/// A line typed on stdin (the address the browser ended on); `None` at
/// its end, so a login with no terminal waits for the browser alone.
async fn pasted_line() -> Option<String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line);
        let _ = tx.send(matches!(read, Ok(n) if n > 0).then_some(line));
    });
    rx.await.ok().flatten()
}

/// Opens `url` with the desktop's opener when there is a desktop; the
/// address printed above is the way in when there is not.
fn open_in_browser(url: &str) {
    let desktop = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()));
    if !desktop {
        return;
    }
    let opened = std::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if opened.is_err() {
        output::err("could not start xdg-open; open the address above yourself");
    }
}

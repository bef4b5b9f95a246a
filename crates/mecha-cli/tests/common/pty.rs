//! A program run at a real terminal: a pseudo-terminal opened here, with
//! the program as its session leader (util-linux `setsid --ctty`), so the
//! exit status the test waits for is the program's own, and Ctrl-C typed
//! at it is the line discipline's SIGINT to it alone.

use std::fs::File;
use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use rustix::termios::{Termios, Winsize, tcgetattr, tcsetwinsize};

/// How long any wait on the terminal lasts before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// How a program at a [`Terminal`] ended.
pub struct Ended {
    pub status: ExitStatus,
    /// Everything it (and its descendants) wrote, escapes and all.
    pub screen: String,
    /// The terminal's modes as it left them: a program that put the
    /// terminal in raw mode must put it back.
    pub modes: Termios,
}

/// A program under a pseudo-terminal: keys go in, everything it writes is
/// kept.
pub struct Terminal {
    child: Child,
    keyboard: File,
    screen: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
}

impl Terminal {
    /// Starts `program` (already given its arguments and environment) at a
    /// fresh terminal of `rows` by `cols`.
    pub fn start(program: &Command, rows: u16, cols: u16) -> Self {
        let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
        let master = openpt(flags).expect("openpt");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        let size = Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        tcsetwinsize(&master, size).expect("set the window size");
        let name = ptsname(&master, Vec::new()).expect("ptsname");
        let name = name.to_str().expect("a terminal's name is text").to_owned();
        // Opened close-on-exec: a test spawning its own program at the
        // same moment must not inherit (and hold open) this terminal.
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&name)
            .expect("open the terminal");
        let mut command = Command::new("setsid");
        // --ctty makes the terminal the new session's; --wait passes the
        // program's status on should setsid have had to fork.
        command
            .args(["--ctty", "--wait"])
            .arg(program.get_program());
        command.args(program.get_args());
        for (key, value) in program.get_envs() {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        if let Some(dir) = program.get_current_dir() {
            command.current_dir(dir);
        }
        let child = command
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave))
            .spawn()
            .expect("start setsid (util-linux)");
        // `command` still holds the terminal's other end: the reader only
        // sees its end once nothing here does.
        drop(command);
        let master = File::from(master);
        let mut output = master.try_clone().unwrap();
        let screen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&screen);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // EIO once every process at the terminal has closed it.
            while let Ok(n) = output.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Self {
            child,
            keyboard: master,
            screen,
            reader: Some(reader),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything written so far, escapes and all.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// Resizes the terminal, as a window would: the program gets SIGWINCH.
    pub fn resize(&self, rows: u16, cols: u16) {
        let size = Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        tcsetwinsize(&self.keyboard, size).expect("set the window size");
    }

    pub fn type_keys(&mut self, keys: &[u8]) {
        self.keyboard.write_all(keys).unwrap();
        self.keyboard.flush().unwrap();
    }

    /// Waits (async: a mock model may answer on the same runtime) until
    /// `done` holds of what was written.
    pub async fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) {
        let start = Instant::now();
        while !done(&self.screen()) {
            assert!(
                start.elapsed() < PATIENCE,
                "never happened: {what}, in {:?}",
                self.screen()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for the program to end, and for everything it wrote.
    pub async fn end(mut self) -> Ended {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "the program never ended: {:?}",
                self.screen()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let modes = tcgetattr(&self.keyboard).expect("read the terminal's modes");
        let reader = self.reader.take();
        let screen = Arc::clone(&self.screen);
        let screen = tokio::task::spawn_blocking(move || {
            // Its descendants may hold the terminal a moment longer.
            if let Some(reader) = reader {
                reader.join().unwrap();
            }
            String::from_utf8_lossy(&screen.lock().unwrap()).into_owned()
        })
        .await
        .unwrap();
        Ended {
            status,
            screen,
            modes,
        }
    }
}

impl Drop for Terminal {
    /// A failed test leaves nothing running.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

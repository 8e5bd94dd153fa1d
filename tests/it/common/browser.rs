//! A real headless browser for the HTML report's tests: Debian's
//! `chromium`, driven through `chromedriver` (package `chromium-driver`)
//! with the W3C WebDriver protocol over HTTP.
//!
//! The browser is required, not optional: a machine without it fails the
//! test with the command that installs it (`.ci/run` installs it first).

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";
const DRIVER: &str = "/usr/bin/chromedriver";

/// A chromedriver process and one browser session in it; both end on drop.
pub struct Browser {
    driver: Child,
    base: String,
    agent: ureq::Agent,
}

impl Browser {
    /// Start chromedriver and a headless chromium session.
    pub fn start() -> Browser {
        for exe in [CHROMIUM, DRIVER] {
            assert!(
                Path::new(exe).exists(),
                "{exe} is missing: the HTML report is tested in a real browser; \
                 install it with `apt-get install -y chromium chromium-driver` (see README)"
            );
        }
        // A free port: bind to 0, read it, let it go for chromedriver.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(DRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let mut b = Browser {
            driver,
            base: format!("http://127.0.0.1:{port}"),
            agent,
        };
        let ready = Instant::now();
        while b.get_raw("/status").is_none() {
            assert!(
                ready.elapsed() < Duration::from_secs(20),
                "chromedriver did not answer"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = std::env::temp_dir().join(format!("cprace-chromium-{port}"));
        // As root (CI), chromium needs --no-sandbox; the rest keeps it off
        // the network it has no use for.
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {"binary": CHROMIUM, "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--window-size=1400,1000",
                format!("--user-data-dir={}", profile.display()),
            ]},
        }}});
        let session = b.post("/session", caps);
        let id = session["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {session}"))
            .to_string();
        b.base = format!("{}/session/{id}", b.base);
        b
    }

    fn get_raw(&self, path: &str) -> Option<Value> {
        let mut r = self.agent.get(format!("{}{path}", self.base)).call().ok()?;
        r.body_mut().read_json::<Value>().ok()
    }

    fn send(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.base);
        let reply = match (method, body) {
            ("POST", Some(b)) => self.agent.post(&url).send_json(b),
            ("DELETE", _) => self.agent.delete(&url).call(),
            _ => self.agent.get(&url).call(),
        };
        let v: Value = reply
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
            .body_mut()
            .read_json()
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        if let Some(err) = v["value"].get("error") {
            panic!("{method} {path}: {err}: {}", v["value"]["message"]);
        }
        v["value"].clone()
    }

    fn post(&self, path: &str, body: Value) -> Value {
        self.send("POST", path, Some(body))
    }

    /// Open `page` (a file) and wait until its script has drawn it.
    pub fn open(&self, page: &Path) {
        let url = format!("file://{}", page.canonicalize().unwrap().display());
        self.post("/url", json!({ "url": url }));
        let start = Instant::now();
        while self.eval("return document.body && document.body.dataset.ready === 'true'")
            != json!(true)
        {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{url}: the page's script never finished (console: {:?})",
                self.console()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The value of a script run in the page (`return ...`).
    pub fn eval(&self, script: &str) -> Value {
        self.post("/execute/sync", json!({ "script": script, "args": [] }))
    }

    /// The WebDriver id of the element `css` selects.
    fn element(&self, css: &str) -> String {
        let e = self.post("/element", json!({"using": "css selector", "value": css}));
        e.as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_string()
    }

    /// Click the element `css` selects (as a user would: WebDriver scrolls
    /// it into view and sends the mouse there).
    pub fn click(&self, css: &str) {
        let id = self.element(css);
        self.post(&format!("/element/{id}/click"), json!({}));
    }

    /// Type `text` into the element `css` selects.
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.post(&format!("/element/{id}/value"), json!({ "text": text }));
    }

    /// Text of the element `css` selects.
    pub fn text(&self, css: &str) -> String {
        let v = self.eval(&format!(
            "const e = document.querySelector({}); return e ? e.textContent : null",
            json!(css)
        ));
        v.as_str()
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_string()
    }

    /// How many elements `css` selects.
    pub fn count(&self, css: &str) -> u64 {
        self.eval(&format!(
            "return document.querySelectorAll({}).length",
            json!(css)
        ))
        .as_u64()
        .unwrap()
    }

    /// The strings a script run in the page returns as an array.
    pub fn strings(&self, script: &str) -> Vec<String> {
        let v = self.eval(script);
        v.as_array()
            .unwrap_or_else(|| panic!("not an array: {v}"))
            .iter()
            .map(|x| x.as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// The console's errors (level SEVERE: uncaught exceptions,
    /// `console.error`, failed loads) since the last call.
    pub fn errors(&self) -> Vec<String> {
        self.console()
            .into_iter()
            .filter(|(level, _)| level == "SEVERE")
            .map(|(_, text)| text)
            .collect()
    }

    /// The browser console's messages since the last call (level, text).
    pub fn console(&self) -> Vec<(String, String)> {
        let v = self.post("/se/log", json!({"type": "browser"}));
        v.as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                (
                    m["level"].as_str().unwrap_or_default().to_string(),
                    m["message"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.agent.delete(&self.base).call();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

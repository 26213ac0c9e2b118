//! Servers no one here wrote: Python's `socketserver` echoing lines and 4-byte length-prefixed
//! frames, and Python's `http.server` answering HTTP where a raw TCP reply was expected. Each
//! runs as a child process on a free port of 127.0.0.1, killed when the test ends.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use throng_core::ErrorClass;
use throng_tcp::status::OK;
use throng_tcp::TcpOptions;

use crate::common::*;

/// A Python server; killed on drop.
struct Python {
    child: Child,
    port: u16,
}

impl Drop for Python {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Echo servers: `line` echoes each line, `len4` each frame of a big-endian 4-byte length
/// prefix. Prints its port, then serves.
const ECHO: &str = r#"
import socketserver, struct, sys
mode = sys.argv[1]
class Echo(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            if mode == "line":
                line = self.rfile.readline()
                if not line:
                    return
                self.wfile.write(line)
            else:
                head = self.rfile.read(4)
                if len(head) < 4:
                    return
                (n,) = struct.unpack(">I", head)
                self.wfile.write(head + self.rfile.read(n))
class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
server = Server(("127.0.0.1", 0), Echo)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// Python 3 from the system (the tests need it: a missing one fails them, it does not skip).
fn python(args: &[&str]) -> Python {
    let mut child = Command::new("/usr/bin/python3")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("/usr/bin/python3 runs");
    let mut line = String::new();
    let stdout = child.stdout.take().unwrap();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    // http.server says "Serving HTTP on 127.0.0.1 port N (http://...) ..."; ours, the port.
    let port = line
        .split_whitespace()
        .find_map(|w| w.parse::<u16>().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    Python { child, port }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pythons_socketserver_echoes_lines_and_length_prefixed_frames() {
    for mode in ["line", "len4"] {
        let py = python(&["-u", "-c", ECHO, mode]);
        let url = format!("tcp://127.0.0.1:{}", py.port);
        let tcp = TcpOptions {
            framing: mode.parse().unwrap(),
            ..TcpOptions::default()
        };
        for (name, plan) in [
            ("closed", closed(3, 10)),
            ("open", open(100.0, Some(30), None)),
        ] {
            let options = client_options(Duration::from_secs(5), tcp.clone());
            let driver = steps(&url, b"hello there", Some("hello there"), &options);
            let s = run(plan, driver).await;
            let what = format!("{mode} {name}: {}", errors(&s));
            assert_eq!(s.total.samples, 30, "{what}");
            assert_eq!(s.total.errors, 0, "{what}");
            assert_eq!(status(&s, OK), 30, "{what}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_answering_is_class_protocol() {
    let py = python(&["-u", "-m", "http.server", "--bind", "127.0.0.1", "0"]);
    let url = format!("tcp://127.0.0.1:{}", py.port);
    // An HTTP request, sent as written (no prefix, which the server would wait behind for a
    // line). "HTTP" read as a 4-byte length is 1.2 GB: refused on the prefix. As lines, the
    // status line is a frame and the headers after it are more than one reply.
    for mode in ["len4", "line"] {
        for (name, plan) in [
            ("closed", closed(2, 4)),
            ("open", open(40.0, Some(8), None)),
        ] {
            let tcp = TcpOptions {
                framing: mode.parse().unwrap(),
                max_reply: 64 * 1024,
                frame_request: false,
            };
            let options = client_options(Duration::from_secs(5), tcp);
            let s = run(plan, steps(&url, b"GET / HTTP/1.0\r\n\r\n", None, &options)).await;
            let what = format!("{mode} {name}: {}", errors(&s));
            assert_eq!(s.total.samples, 8, "{what}");
            assert_eq!(class(&s, ErrorClass::Protocol), 8, "{what}");
        }
    }
}

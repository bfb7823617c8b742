//! One server per home: a second `fcm serve` on the same FCM_HOME refuses, names the one
//! that runs, and leaves its `serve.json` alone; once the first stops, the home is free.

mod support;

use support::*;

#[test]
fn a_second_server_on_one_home_refuses_and_leaves_the_first_alone() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let first = w.serve(&[]);
    let record = std::fs::read_to_string(w.home_file("serve.json")).unwrap();
    let out = w.fcm(&["serve", "--port", "0"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("already runs on this home: pid {}", first.pid())),
        "{out:?}"
    );
    assert!(out.stderr.contains(&first.base), "its address: {out:?}");
    assert!(out.stderr.contains("`fcm stop`"), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(w.home_file("serve.json")).unwrap(),
        record,
        "the first server's record is untouched"
    );
    let status = w.fcm(&["status", "--json"]);
    assert_eq!(status.code, 0, "{status:?}");
    assert_eq!(first.chat("fcm", false).status, 200);
    assert_eq!(first.stop(), 0);
    // The home is free again.
    let second = w.serve(&[]);
    assert_eq!(second.chat("fcm", false).status, 200);
    assert_eq!(second.stop(), 0);
}

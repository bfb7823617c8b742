//! The `process_*` metrics every Prometheus client library writes for its process (CPU
//! time, memory, file descriptors, start time), so the dashboards and alerts made for them
//! work on fcm too. Read from Linux's process file system at scrape time; elsewhere they
//! are left out, as the official clients leave out what a platform cannot tell.

use super::exposition::Exposition;

/// What the kernel says of this process.
#[derive(Debug, Clone, PartialEq)]
struct ProcessStats {
    cpu_seconds: f64,
    resident_bytes: u64,
    virtual_bytes: u64,
    start_time_seconds: f64,
    open_fds: Option<u64>,
    max_fds: Option<u64>,
}

/// Clock ticks per second of the times in the stat file: the kernel reports them in
/// USER_HZ, fixed at 100 on every architecture Linux runs fcm on (the Go client assumes
/// the same).
const USER_HZ: f64 = 100.0;

/// Writes the `process_*` families, when this platform tells them.
pub(super) fn write(e: &mut Exposition) {
    let Some(p) = read() else {
        return;
    };
    let families: [(&str, &str, &str, Option<f64>); 6] = [
        (
            "process_cpu_seconds_total",
            "counter",
            "CPU time this process has used, user and system, in seconds.",
            Some(p.cpu_seconds),
        ),
        (
            "process_resident_memory_bytes",
            "gauge",
            "Memory of this process held in RAM (its resident set), in bytes.",
            Some(p.resident_bytes as f64),
        ),
        (
            "process_virtual_memory_bytes",
            "gauge",
            "The virtual address space of this process, in bytes.",
            Some(p.virtual_bytes as f64),
        ),
        (
            "process_start_time_seconds",
            "gauge",
            "When this process started, in seconds since the Unix epoch.",
            Some(p.start_time_seconds),
        ),
        (
            "process_open_fds",
            "gauge",
            "File descriptors this process has open.",
            p.open_fds.map(|n| n as f64),
        ),
        (
            "process_max_fds",
            "gauge",
            "The most file descriptors this process may open (its soft limit).",
            p.max_fds.map(|n| n as f64),
        ),
    ];
    for (name, kind, help, value) in families {
        if let Some(v) = value {
            e.family(name, kind, help);
            e.sample(name, &[], v);
        }
    }
}

#[cfg(target_os = "linux")]
fn read() -> Option<ProcessStats> {
    let text = |path: &str| std::fs::read_to_string(path).ok();
    let stat = parse_stat(&text("/proc/self/stat")?)?;
    let boot = boot_time(&text("/proc/stat")?)?;
    Some(ProcessStats {
        cpu_seconds: stat.cpu_ticks as f64 / USER_HZ,
        resident_bytes: status_bytes(&text("/proc/self/status")?, "VmRSS:")?,
        virtual_bytes: stat.virtual_bytes,
        start_time_seconds: boot as f64 + stat.start_ticks as f64 / USER_HZ,
        open_fds: std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as u64),
        max_fds: text("/proc/self/limits").and_then(|l| max_open_files(&l)),
    })
}

#[cfg(not(target_os = "linux"))]
fn read() -> Option<ProcessStats> {
    None
}

/// What the stat file says: CPU (user and system) and start time in ticks, virtual size.
#[derive(Debug, PartialEq, Eq)]
struct Stat {
    cpu_ticks: u64,
    start_ticks: u64,
    virtual_bytes: u64,
}

/// Reads the stat file's line. Its second field, the command name in parentheses, may hold
/// spaces and parentheses itself: the fields are counted from the last `)`.
fn parse_stat(line: &str) -> Option<Stat> {
    let after = &line[line.rfind(')')? + 1..];
    // Field 3 (the state) is the first after the name: field n is at index n - 3.
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        cpu_ticks: field(14)? + field(15)?,
        start_ticks: field(22)?,
        virtual_bytes: field(23)?,
    })
}

/// The boot time (seconds since the epoch): the system stat file's `btime` line.
fn boot_time(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// A `kB` line of the status file (`VmRSS:   1234 kB`), in bytes.
fn status_bytes(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix(key))?;
    let kb: u64 = line.split_whitespace().next()?.parse().ok()?;
    Some(kb * 1024)
}

/// The soft limit of open files from the limits file; `None` when unlimited.
fn max_open_files(limits: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))?;
    line.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stat_line_is_read_past_a_name_with_spaces_and_parentheses() {
        let line = "4242 (fcm (serve) x) S 1 4242 4242 0 -1 4194560 1500 0 0 0 250 75 0 0 20 0 \
                    9 0 123456 987654321 2048 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                cpu_ticks: 325,
                start_ticks: 123_456,
                virtual_bytes: 987_654_321,
            })
        );
        assert_eq!(parse_stat("4242 (fcm) S 1 2"), None, "too short");
        assert_eq!(parse_stat("no name here"), None);
    }

    #[test]
    fn boot_time_memory_and_the_file_limit_are_read_from_their_files() {
        assert_eq!(
            boot_time("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"),
            Some(1_700_000_000)
        );
        assert_eq!(boot_time("cpu 1\n"), None);
        let status = "Name:\tfcm\nVmSize:\t  20000 kB\nVmRSS:\t    5120 kB\n";
        assert_eq!(status_bytes(status, "VmRSS:"), Some(5_242_880));
        assert_eq!(status_bytes(status, "VmSwap:"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max open files            1024                 524288               files     \n";
        assert_eq!(max_open_files(limits), Some(1024));
        assert_eq!(
            max_open_files(
                "Max open files            unlimited            unlimited            files\n"
            ),
            None
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read_on_linux() {
        let p = read().expect("the process file system is there");
        assert!(
            p.resident_bytes > 0 && p.virtual_bytes >= p.resident_bytes,
            "{p:?}"
        );
        assert!(p.open_fds.unwrap() >= 3, "{p:?}");
        let now = crate::time::now_ms() as f64 / 1000.0;
        assert!(
            p.start_time_seconds <= now + 1.0 && p.start_time_seconds > now - 86_400.0,
            "{p:?}"
        );
        let mut e = Exposition::new();
        write(&mut e);
        let text = e.finish();
        for name in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_virtual_memory_bytes",
            "process_start_time_seconds",
            "process_open_fds",
        ] {
            assert!(text.contains(&format!("\n{name} ")), "{name} in {text}");
        }
    }
}

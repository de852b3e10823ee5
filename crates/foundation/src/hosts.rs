//! Hosts and addresses as a text writes them: an IP in any notation, a name under a public suffix,
//! a file's name that only looks like a host. Read alike by the action gate (`gate`) and the
//! content check (`trust`).

use crate::letters::fold;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

/// A host or IP in its one form: an IP in any notation as `ip:a.b.c.d` (or `ip:` and IPv6's
/// canonical text), a name folded, without a trailing dot, IDNA to Unicode.
pub fn normal_host(raw: &str) -> Option<String> {
    let h = raw
        .trim_matches(|c| c == '[' || c == ']')
        .trim_end_matches('.');
    if h.is_empty() {
        return None;
    }
    if let Some(v4) = parse_ipv4(h) {
        return Some(format!("ip:{v4}"));
    }
    if let Ok(v6) = h.parse::<Ipv6Addr>() {
        return Some(match v6.to_ipv4_mapped() {
            Some(v4) => format!("ip:{v4}"),
            None => format!("ip:{v6}"),
        });
    }
    if !h.contains('.') && h != "localhost" {
        return None;
    }
    let (unicode, _) = idna::domain_to_unicode(h);
    Some(fold(&unicode))
}

/// An IPv4 address in any notation inet_aton reads: dotted, fewer parts (`127.1`), one number
/// (`2130706433`), hex (`0x7f000001`, `0x7f.1`), octal (`0177.0.0.1`).
pub fn parse_ipv4(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let num = |p: &str| -> Option<u64> {
        if p.is_empty() {
            None
        } else if let Some(hex) = p.strip_prefix("0x") {
            u64::from_str_radix(hex, 16).ok()
        } else if p.len() > 1 && p.starts_with('0') {
            u64::from_str_radix(&p[1..], 8).ok()
        } else {
            p.parse().ok()
        }
    };
    let nums: Vec<u64> = parts.iter().map(|p| num(p)).collect::<Option<_>>()?;
    let (last, head) = nums.split_last()?;
    if head.iter().any(|&n| n > 255) {
        return None;
    }
    let room = 8 * (4 - head.len() as u32);
    if *last >= (1u64 << room) {
        return None;
    }
    let mut value: u64 = 0;
    for (i, n) in head.iter().enumerate() {
        value |= n << (24 - 8 * i as u32);
    }
    value |= last;
    // A plain small number is a number, not an address.
    if parts.len() == 1 && value < 1 << 24 {
        return None;
    }
    Some(Ipv4Addr::from(value as u32))
}

/// Does the name end as a file does (`dump.sql`, `notes.txt`)? Such a name given to a network
/// command is its payload, not its destination.
pub(crate) fn file_like(name: &str) -> bool {
    const EXTS: &[&str] = &[
        "sql", "txt", "json", "tar", "gz", "tgz", "bz2", "xz", "zst", "csv", "log", "yml", "yaml",
        "toml", "lock", "py", "js", "ts", "rs", "go", "rb", "java", "c", "h", "cpp", "html", "css",
        "pdf", "png", "jpg", "svg", "md", "sh", "bin", "dat", "db", "sqlite", "pem", "key", "pub",
        "env", "conf", "cfg", "ini", "xml", "bak", "dump", "out", "patch", "diff", "whl", "jar",
    ];
    EXTS.contains(&name.rsplit('.').next().unwrap_or(""))
}

/// Is the name's last label a top-level domain (not a file extension)?
pub(crate) fn known_tld(name: &str) -> bool {
    // Names the list leaves out, used on networks all the same.
    const RESERVED: &[&str] = &[
        "internal", "local", "lan", "onion", "test", "invalid", "example", "home", "corp",
    ];
    let tld = name.rsplit('.').next().unwrap_or("");
    // `.md`, `.sh`, `.rs` and friends are files too often: a name ending so counts only with a
    // subdomain-looking shape (three labels or more).
    let file_like = [
        "md", "sh", "rs", "py", "js", "ts", "go", "rb", "pl", "cc", "in", "so", "mk", "ms", "zip",
        "mov", "sql", "ps", "pm", "sc", "ai", "io", "gs", "st", "nu",
    ];
    if file_like.contains(&tld) && !matches!(tld, "io" | "ai" | "st" | "gs") {
        return name.matches('.').count() >= 2 && !name.contains('/');
    }
    RESERVED.contains(&tld) || public_suffixes().contains(tld)
}

/// The Public Suffix List's suffixes (top-level domains, and names under which anyone can have
/// a name: `vercel.app`, `s3.amazonaws.com`); `scripts/public-suffixes.sh` regenerates the file.
pub(crate) fn public_suffixes() -> &'static std::collections::HashSet<&'static str> {
    static SET: OnceLock<std::collections::HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| {
        include_str!("../data/public-suffixes.txt")
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .collect()
    })
}

/// The name a host's owner registered: its public suffix and one label more (`x.evil.co.uk` →
/// `evil.co.uk`; `acme.vercel.app` → itself). None for an address, or a public suffix itself.
pub(crate) fn registrable(host: &str) -> Option<&str> {
    if host.starts_with("ip:") {
        return None;
    }
    // Where each label starts; the longest listed suffix wins (no listed one: the last label).
    let mut starts = vec![0];
    starts.extend(host.match_indices('.').map(|(i, _)| i + 1));
    let suffix = starts
        .iter()
        .position(|&i| public_suffixes().contains(&host[i..]))
        .unwrap_or(starts.len() - 1);
    // The suffix itself owns nothing; one label more is the registered name.
    (suffix > 0).then(|| &host[starts[suffix - 1]..])
}

/// A cloud's object store that names the bucket in the URL's path (`s3.amazonaws.com/bucket`,
/// `storage.googleapis.com/bucket`): the host is everyone's and the bucket is the account, as on
/// a shared endpoint. Its first label says storage, and no one but the cloud owns the name: it
/// is a public suffix, or one label above one (`storage.googleapis.com`; not `storage.evil.com`).
pub(crate) fn path_style_storage(host: &str) -> bool {
    let first = host.split('.').next().unwrap_or("");
    let says_storage = matches!(first, "s3" | "storage") || first.starts_with("s3-");
    says_storage && host.matches('.').count() >= 2 && registrable(host).is_none_or(|r| r == host)
}

/// This machine: never a destination that takes anything away.
/// Is `name` (folded, as a text writes it) a host on some other machine: a name under a listed
/// public suffix or reserved ending, or an IP address, that is neither a file name nor loopback?
/// The content check's destinations use it (`crate::trust`), so both read hosts the same way.
pub fn remote_host(name: &str) -> bool {
    let name = name.trim_end_matches('.');
    let named = parse_ipv4(name).is_some() || (known_tld(name) && !file_like(name));
    named && normal_host(name).is_some_and(|h| !is_loopback(&h))
}

pub(crate) fn is_loopback(host: &str) -> bool {
    // `.test` and `.invalid` never resolve (RFC 2606): test fixtures' hosts.
    host == "localhost"
        || host.ends_with(".localhost")
        || host.ends_with(".test")
        || host.ends_with(".invalid")
        || host.starts_with("ip:127.")
        || host == "ip:::1"
        || host == "ip:0.0.0.0"
}

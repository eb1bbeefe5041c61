//! Unit strings in machine files: "25GB/s", "100Gb/s", "1.2us", "20000ns", "64KiB", "0.07ns".
//!
//! Every value is range-checked here, at the boundary: a duration over [`MAX_DURATION_NS`] (10^6 s),
//! a bandwidth outside [`MIN_BANDWIDTH`]..=[`MAX_BANDWIDTH`] or a size over [`MAX_SIZE`] is an error,
//! so that no later integer conversion can wrap or saturate (docs/machine-files.md, "Bounds").

/// Longest duration a machine file or option may state: 10^6 s, in ns.
pub const MAX_DURATION_NS: f64 = 1e15;
/// Slowest bandwidth: 1 B/s.
pub const MIN_BANDWIDTH: f64 = 1.0;
/// Fastest bandwidth: 10^15 B/s (1 PB/s).
pub const MAX_BANDWIDTH: f64 = 1e15;
/// Largest size: 2^60 B (1 EiB).
pub const MAX_SIZE: u64 = 1 << 60;

/// Bandwidth in bytes per second.  Decimal prefixes are powers of 1000, binary (KiB) of 1024;
/// a lower-case `b` means bits.
pub fn parse_bandwidth(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let body = t.strip_suffix("/s").or_else(|| t.strip_suffix("ps")).ok_or_else(|| {
        format!("bandwidth {s:?} needs a unit per second, e.g. \"25GB/s\" or \"100Gb/s\"")
    })?;
    let (num, unit) = split_num(body).ok_or_else(|| format!("bandwidth {s:?} has no number"))?;
    let bits = unit.ends_with('b');
    let prefix = unit.trim_end_matches(['B', 'b']);
    if unit.is_empty() || !(unit.ends_with('B') || bits) {
        return Err(format!("bandwidth {s:?}: unit must end in B (bytes) or b (bits), e.g. GB/s"));
    }
    let mult = prefix_mult(prefix).ok_or_else(|| format!("bandwidth {s:?}: unknown prefix {prefix:?}"))?;
    let v = num * mult / if bits { 8.0 } else { 1.0 };
    if !(v > 0.0) || !v.is_finite() {
        return Err(format!("bandwidth {s:?} must be positive"));
    }
    if v < MIN_BANDWIDTH {
        return Err(format!("bandwidth {s:?} is {v:e} B/s, below the smallest allowed, 1 B/s"));
    }
    if v > MAX_BANDWIDTH {
        return Err(format!("bandwidth {s:?} is {v:e} B/s, above the largest allowed, 1e15 B/s (1 PB/s)"));
    }
    Ok(v)
}

/// Duration in nanoseconds (may be fractional: "0.07ns" per byte).
pub fn parse_duration_ns(s: &str) -> Result<f64, String> {
    let (num, unit) = split_num(s.trim()).ok_or_else(|| format!("duration {s:?} has no number"))?;
    let mult = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" => return Err(format!("duration {s:?} needs a unit: ns, us, ms or s")),
        u => return Err(format!("duration {s:?}: unknown unit {u:?} (ns, us, ms, s)")),
    };
    let v = num * mult;
    if v < 0.0 || !v.is_finite() {
        return Err(format!("duration {s:?} must be zero or positive"));
    }
    if v > MAX_DURATION_NS {
        return Err(format!("duration {s:?} is over the longest allowed, 1e6 s"));
    }
    Ok(v)
}

/// Size in bytes: "64KiB", "512KB", "1MiB", "8B", "4096".
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (num, unit) = split_num(s.trim()).ok_or_else(|| format!("size {s:?} has no number"))?;
    let prefix = unit.strip_suffix('B').unwrap_or(unit);
    let mult = prefix_mult(prefix).ok_or_else(|| format!("size {s:?}: unknown unit {unit:?}"))?;
    let v = num * mult;
    if v < 0.0 || !v.is_finite() {
        return Err(format!("size {s:?} must be zero or positive"));
    }
    if v > MAX_SIZE as f64 {
        return Err(format!("size {s:?} is over the largest allowed, 2^60 B (1EiB)"));
    }
    Ok(v.round() as u64)
}

fn split_num(s: &str) -> Option<(f64, &str)> {
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == 'e' || *c == 'E' || *c == '-' || *c == '+'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    // an 'e' may also start a unit; back off if the number does not parse
    let mut end = end;
    loop {
        if let Ok(v) = s[..end].trim().parse::<f64>() {
            return Some((v, s[end..].trim()));
        }
        if end == 0 {
            return None;
        }
        end -= 1;
    }
}

fn prefix_mult(p: &str) -> Option<f64> {
    Some(match p {
        "" => 1.0,
        "K" | "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0f64.powi(4),
        _ => return None,
    })
}

/// Formats bytes/s as "12.5 GB/s".
pub fn fmt_bw(b: f64) -> String {
    format!("{:.4} GB/s", b / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parses_units() {
        assert_eq!(parse_bandwidth("25GB/s").unwrap(), 25e9);
        assert_eq!(parse_bandwidth("100Gb/s").unwrap(), 12.5e9);
        assert_eq!(parse_bandwidth("1 GiB/s").unwrap(), 1073741824.0);
        assert_eq!(parse_duration_ns("1.2us").unwrap(), 1200.0);
        assert_eq!(parse_duration_ns("20000ns").unwrap(), 20000.0);
        assert_eq!(parse_duration_ns("0.07ns").unwrap(), 0.07);
        assert_eq!(parse_size("64KiB").unwrap(), 65536);
        assert_eq!(parse_size("512KB").unwrap(), 512000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1e3B").unwrap(), 1000);
        assert!(parse_bandwidth("25").is_err());
        assert!(parse_bandwidth("25GX/s").is_err());
        assert!(parse_duration_ns("5").is_err());
        assert!(parse_duration_ns("5 weeks").is_err());
        assert!(parse_bandwidth("-3GB/s").is_err());
    }

    #[test]
    fn range_checked() {
        // issue 24: values that used to wrap or saturate a u64 of ns
        assert!(parse_duration_ns("1.9e10s").unwrap_err().contains("1e6 s"));
        assert!(parse_duration_ns("1e30s").is_err());
        assert_eq!(parse_duration_ns("1000000s").unwrap(), 1e15);
        assert!(parse_bandwidth("1e-300GB/s").unwrap_err().contains("1 B/s"));
        assert!(parse_bandwidth("0.5B/s").is_err());
        assert_eq!(parse_bandwidth("1B/s").unwrap(), 1.0);
        assert!(parse_bandwidth("2PB/s").is_err() && parse_bandwidth("1e6TB/s").is_err());
        assert!(parse_size("2EiB").is_err() && parse_size("1e30").is_err());
        assert_eq!(parse_size("1024TiB").unwrap(), 1 << 50);
    }
}

//! Numbers as a person reads them: counts with thousands separators, times in the unit that fits (ns, µs, ms, s),
//! shares in percent, sizes in binary units and rates in MiB/s. No crate in the workspace does all of these, and
//! each is a few lines.

/// `24576` → `24,576`; fractions are rounded.
pub fn count(n: f64) -> String {
    let n = n.round();
    let digits = format!("{}", n.abs() as u64);
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0.0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Three significant figures, without a trailing `.0` on whole numbers of three digits or more.
fn figures(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.decimals$}")
}

/// A duration given in nanoseconds, in the largest unit in which it is at least 1: `72786` → `72.8 µs`.
pub fn duration(ns: f64) -> String {
    let a = ns.abs();
    let (v, unit) = if a >= 60e9 {
        return minutes(ns);
    } else if a >= 1e9 {
        (ns / 1e9, "s")
    } else if a >= 1e6 {
        (ns / 1e6, "ms")
    } else if a >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        return format!("{} ns", ns.round());
    };
    format!("{} {unit}", figures(v))
}

/// `125e9` → `2 min 5 s`.
fn minutes(ns: f64) -> String {
    let s = (ns / 1e9).round() as u64;
    format!("{} min {} s", s / 60, s % 60)
}

/// A share of 1 in percent: whole percents from 10% up, one decimal below (none when it is 0), `<0.1%` for what
/// rounds to nothing.
pub fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p != 0.0 && p.abs() < 0.05 {
        return "<0.1%".into();
    }
    let text = if p.abs() >= 9.95 {
        format!("{p:.0}")
    } else {
        format!("{p:.1}")
    };
    format!("{}%", text.strip_suffix(".0").unwrap_or(&text))
}

/// Bytes in the largest binary unit that fits: an exact multiple reads whole (`4096` → `4 KiB`), anything else
/// with three significant figures (`1536` → `1.50 KiB`).
pub fn bytes(b: f64) -> String {
    for (suffix, unit) in [
        ("GiB", (1u64 << 30) as f64),
        ("MiB", (1 << 20) as f64),
        ("KiB", 1024.0),
    ] {
        if b.abs() >= unit {
            let v = b / unit;
            return if v.fract() == 0.0 {
                format!("{v:.0} {suffix}")
            } else {
                format!("{} {suffix}", figures(v))
            };
        }
    }
    format!("{} B", b.round())
}

/// A rate in MiB per second.
pub fn mib_per_s(v: f64) -> String {
    format!("{} MiB/s", figures(v))
}

/// A plain number: whole numbers with separators, others with three significant figures.
pub fn plain(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 1000.0 {
        count(v)
    } else {
        figures(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_group_thousands() {
        assert_eq!(count(0.0), "0");
        assert_eq!(count(999.0), "999");
        assert_eq!(count(1000.0), "1,000");
        assert_eq!(count(24_576.0), "24,576");
        assert_eq!(count(1_234_567.4), "1,234,567");
        assert_eq!(count(-12_345.0), "-12,345");
    }

    #[test]
    fn durations_take_the_unit_that_fits() {
        assert_eq!(duration(512.0), "512 ns");
        assert_eq!(duration(72_786.002), "72.8 µs");
        assert_eq!(duration(1_500.0), "1.50 µs");
        assert_eq!(duration(410e6), "410 ms");
        assert_eq!(duration(1.24e9), "1.24 s");
        assert_eq!(duration(125e9), "2 min 5 s");
    }

    #[test]
    fn shares_read_as_percents() {
        assert_eq!(percent(0.71), "71%");
        assert_eq!(percent(0.0995), "10%");
        assert_eq!(percent(0.042), "4.2%");
        assert_eq!(percent(0.0001), "<0.1%");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(percent(0.05), "5%");
        assert_eq!(percent(1.0), "100%");
    }

    #[test]
    fn sizes_and_rates_in_binary_units() {
        assert_eq!(bytes(4096.0), "4 KiB");
        assert_eq!(bytes(1536.0), "1.50 KiB");
        assert_eq!(bytes(100.0), "100 B");
        assert_eq!(bytes((3u64 << 30) as f64), "3 GiB");
        assert_eq!(bytes(150.4 * (1 << 20) as f64), "150 MiB");
        assert_eq!(mib_per_s(1234.4), "1234 MiB/s");
        assert_eq!(mib_per_s(12.34), "12.3 MiB/s");
        assert_eq!(plain(2.5), "2.50");
        assert_eq!(plain(4096.0), "4,096");
    }
}

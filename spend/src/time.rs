//! Timestamps: RFC 3339 text to Unix milliseconds, milliseconds to a UTC day,
//! and the creation time embedded in a UUIDv7. No calendar crate: the civil
//! date arithmetic is the usual days-from-civil conversion.

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp such as
/// `2026-11-03T10:00:00.123Z` or `2026-11-03T12:00:00+02:00`.
pub fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let mut v = 0i64;
        for &c in &b[from..to] {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(c - b'0');
        }
        Some(v)
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, min, sec) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0i64;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 3 {
                millis = millis * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start)..3 {
            millis *= 10;
        }
    }
    let offset_secs = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
            let (oh, om) = (num(i + 1, i + 3)?, num(i + 4, i + 6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if sign == b'+' { o } else { -o }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + min * 60 + sec - offset_secs;
    Some(secs * 1000 + millis)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` of a Unix time in milliseconds.
pub fn rfc3339_ms(ms: i64) -> String {
    format!("{}.{:03}Z", seconds_part(ms), ms.rem_euclid(1000))
}

/// `YYYY-MM-DDTHH:MM:SSZ` of a Unix time in milliseconds (cut to the second).
pub fn rfc3339(ms: i64) -> String {
    format!("{}Z", seconds_part(ms))
}

/// `YYYY-MM-DDTHH:MM:SS` (UTC).
fn seconds_part(ms: i64) -> String {
    let (y, m, d) = civil_from_days(ms.div_euclid(86_400_000));
    let secs = ms.rem_euclid(86_400_000) / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// The UTC day `YYYY-MM-DD` of a Unix time in milliseconds.
pub fn utc_day(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The creation time (ms) a UUIDv7 carries in its first 48 bits; `None` for
/// any other UUID version.
pub fn uuid_v7_ms(uuid: &str) -> Option<i64> {
    let hex: String = uuid.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || hex.as_bytes().get(12) != Some(&b'7') {
        return None;
    }
    i64::from_str_radix(hex.get(..12)?, 16).ok()
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub(crate) fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_reads_utc_offsets_and_fractions() {
        // 2000-03-01 is 30 years (7 leap days) + Jan + 29-day Feb after the
        // epoch: (30*365 + 7 + 31 + 29) days * 86_400 s = 951_868_800 s.
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339_ms("1970-01-02T00:00:01.5Z"), Some(86_401_500));
        assert_eq!(parse_rfc3339_ms("2000-03-01T00:00:00Z"), Some(951_868_800_000));
        assert_eq!(
            parse_rfc3339_ms("2026-11-03T12:00:00+02:00"),
            parse_rfc3339_ms("2026-11-03T10:00:00.000Z")
        );
        assert_eq!(
            parse_rfc3339_ms("2026-11-03T10:00:00.123456Z").map(|ms| ms % 1000),
            Some(123)
        );
        for bad in [
            "",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-11-03T10:00:00",
            "yesterday",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn days_round_trip() {
        assert_eq!(utc_day(0), "1970-01-01");
        assert_eq!(utc_day(-1), "1969-12-31");
        assert_eq!(utc_day(951_868_800_000 - 1), "2000-02-29");
        let ms = parse_rfc3339_ms("2026-11-03T23:59:59.999Z").expect("valid");
        assert_eq!(utc_day(ms), "2026-11-03");
        assert_eq!(utc_day(ms + 1), "2026-11-04");
    }

    #[test]
    fn uuid_v7_time() {
        // 0x019a4b2c0000 ms = 1_762_130_427_904 ms.
        assert_eq!(
            uuid_v7_ms("019a4b2c-0000-7000-8000-000000000000"),
            Some(0x019a_4b2c_0000)
        );
        assert_eq!(uuid_v7_ms("5a128faa-8253-489e-b935-6c08e8e670c0"), None);
    }
}

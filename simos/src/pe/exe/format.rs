//! msvcrt's `printf` format language, for the `vfprintf` family the program imports.
//!
//! Conversions `d i u o x X c C s S p e E f F g G a A %` with the flags `- + space # 0`, a
//! width and a precision (either may be `*`), and the length modifiers `hh h l ll L w I I32
//! I64 j z t`. `%n` is refused as msvcrt refuses it by default (its invalid-parameter handler);
//! so is any conversion it does not know. Exponents have at least three digits, as msvcrt
//! prints them; non-finite doubles print as `inf` and `nan`. Wide strings and characters
//! come out in the ANSI code page (1252): a character outside it is `?`.
//! <https://learn.microsoft.com/en-us/cpp/c-runtime-library/format-specification-syntax-printf-and-wprintf-functions>

use super::super::umd::guest::Bad;

/// Why a format could not be printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// An argument or string pointer could not be read (the process's access violation).
    Fault,
    /// `%n` or an unknown conversion (the invalid-parameter handler ends the process).
    Invalid,
}

impl From<Bad> for Error {
    fn from(_: Bad) -> Self {
        Self::Fault
    }
}

/// Where the arguments come from.
pub trait Args {
    /// The next argument slot (8 bytes on x64, whatever its type).
    fn next(&mut self) -> Result<u64, Bad>;
    /// The bytes of the NUL-terminated string at `addr`, at most `max`.
    fn string(&mut self, addr: u64, max: usize) -> Result<Vec<u8>, Bad>;
    /// The UTF-16 units of the NUL-terminated wide string at `addr`, at most `max`.
    fn wide(&mut self, addr: u64, max: usize) -> Result<Vec<u16>, Bad>;
}

/// The longest string one conversion prints (a bound on what is read from the process).
const MAX_STRING: usize = 1 << 20;

#[derive(Default, Clone, Copy)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Len {
    Default,
    Char,
    Short,
    Long,
    Wide64,
    WideChar,
}

/// Code page 1252's characters for 0x80..0xA0 (0: the byte stands for the same code point).
const HIGH: [u16; 32] = [
    0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039,
    0x0152, 0, 0x017D, 0, 0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC,
    0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
];

/// The character the ANSI code page (1252) has for `u`, else `?`.
fn ansi(u: u32) -> u8 {
    if let Some(i) = HIGH.iter().position(|&h| h != 0 && u32::from(h) == u) {
        return 0x80 + i as u8;
    }
    match u {
        0..=0x7F | 0xA0..=0xFF => u as u8,
        0x80..=0x9F if HIGH[(u - 0x80) as usize] == 0 => u as u8,
        _ => b'?',
    }
}

/// The UTF-16 unit code page 1252 has for byte `b`.
pub fn ansi_to_unicode(b: u8) -> u16 {
    match b {
        0x80..=0x9F if HIGH[usize::from(b - 0x80)] != 0 => HIGH[usize::from(b - 0x80)],
        _ => u16::from(b),
    }
}

/// The ANSI byte for a UTF-16 unit, or `None` when 1252 has none.
pub fn unicode_to_ansi(u: u16) -> Option<u8> {
    let b = ansi(u32::from(u));
    (b != b'?' || u == u16::from(b'?')).then_some(b)
}

fn pad(out: &mut Vec<u8>, s: &Spec, prefix: &[u8], body: &[u8], numeric: bool) {
    let len = prefix.len() + body.len();
    let fill = s.width.saturating_sub(len);
    if s.left {
        out.extend_from_slice(prefix);
        out.extend_from_slice(body);
        out.extend(std::iter::repeat_n(b' ', fill));
    } else if s.zero && numeric {
        out.extend_from_slice(prefix);
        out.extend(std::iter::repeat_n(b'0', fill));
        out.extend_from_slice(body);
    } else {
        out.extend(std::iter::repeat_n(b' ', fill));
        out.extend_from_slice(prefix);
        out.extend_from_slice(body);
    }
}

fn sign_prefix(neg: bool, s: &Spec) -> &'static [u8] {
    if neg {
        b"-"
    } else if s.plus {
        b"+"
    } else if s.space {
        b" "
    } else {
        b""
    }
}

/// An exponent as msvcrt writes it: sign and at least three digits.
fn exponent(e: i32) -> String {
    format!("{}{:03}", if e < 0 { '-' } else { '+' }, e.unsigned_abs())
}

/// `%e` of a finite, non-negative `v`.
fn fmt_e(v: f64, prec: usize, alt: bool, upper: bool) -> String {
    let s = format!("{v:.prec$e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let mut m = m.to_string();
    if alt && prec == 0 {
        m.push('.');
    }
    let r = format!("{m}e{}", exponent(e));
    if upper {
        r.to_uppercase()
    } else {
        r
    }
}

/// `%g` of a finite, non-negative `v`.
fn fmt_g(v: f64, prec: usize, alt: bool, upper: bool) -> String {
    let p = prec.max(1);
    let x = if v == 0.0 {
        0
    } else {
        let s = format!("{v:.*e}", p - 1);
        s.split_once('e')
            .and_then(|(_, e)| e.parse::<i32>().ok())
            .unwrap_or(0)
    };
    let mut s = if x < -4 || x >= p as i32 {
        let s = fmt_e(v, p - 1, alt, upper);
        if alt {
            return s;
        }
        let (m, e) = s
            .split_once(if upper { 'E' } else { 'e' })
            .unwrap_or((&s, ""));
        let m = if m.contains('.') {
            m.trim_end_matches('0').trim_end_matches('.')
        } else {
            m
        };
        return format!("{m}{}{e}", if upper { 'E' } else { 'e' });
    } else {
        let digits = (p as i32 - 1 - x).max(0) as usize;
        format!("{v:.digits$}")
    };
    if !alt && s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    } else if alt && !s.contains('.') {
        s.push('.');
    }
    s
}

/// `%a` of a finite, non-negative `v`.
fn fmt_a(v: f64, prec: Option<usize>, upper: bool) -> String {
    let bits = v.to_bits();
    let exp = ((bits >> 52) & 0x7FF) as i32;
    let mant = bits & ((1 << 52) - 1);
    let (lead, e) = match (exp, mant) {
        (0, 0) => (0, 0),
        (0, _) => (0, -1022),
        _ => (1, exp - 1023),
    };
    let hex = format!("{mant:013x}");
    let frac = match prec {
        None => hex,
        Some(p) if p <= 13 => hex[..p].to_string(),
        Some(p) => format!("{hex}{}", "0".repeat(p - 13)),
    };
    let dot = if frac.is_empty() { "" } else { "." };
    let sign = if e < 0 { '-' } else { '+' };
    let r = format!("0x{lead}{dot}{frac}p{sign}{}", e.unsigned_abs());
    if upper {
        r.to_uppercase()
    } else {
        r
    }
}

/// Formats `fmt` with `args`.
pub fn format(fmt: &[u8], args: &mut dyn Args) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize| fmt.get(i).copied().unwrap_or(0);
    while i < fmt.len() {
        let c = fmt[i];
        i += 1;
        if c != b'%' {
            out.push(c);
            continue;
        }
        let (s, len) = parse_spec(fmt, &mut i, args)?;
        let conv = at(i);
        i += 1;
        match conv {
            b'%' => out.push(b'%'),
            b'd' | b'i' => {
                let raw = args.next()?;
                let v: i64 = match len {
                    Len::Char => i64::from(raw as i8),
                    Len::Short => i64::from(raw as i16),
                    Len::Wide64 => raw as i64,
                    _ => i64::from(raw as i32),
                };
                let mut digits = v.unsigned_abs().to_string().into_bytes();
                integer_precision(&mut digits, &s);
                let zero = s.zero && s.precision.is_none();
                pad(
                    &mut out,
                    &Spec { zero, ..s },
                    sign_prefix(v < 0, &s),
                    &digits,
                    true,
                );
            }
            b'u' | b'o' | b'x' | b'X' => {
                let raw = args.next()?;
                let v: u64 = match len {
                    Len::Char => u64::from(raw as u8),
                    Len::Short => u64::from(raw as u16),
                    Len::Wide64 => raw,
                    _ => u64::from(raw as u32),
                };
                let mut digits = match conv {
                    b'u' => v.to_string(),
                    b'o' => format!("{v:o}"),
                    b'x' => format!("{v:x}"),
                    _ => format!("{v:X}"),
                }
                .into_bytes();
                integer_precision(&mut digits, &s);
                let prefix: &[u8] = match conv {
                    b'x' if s.alt && v != 0 => b"0x",
                    b'X' if s.alt && v != 0 => b"0X",
                    _ => b"",
                };
                if conv == b'o' && s.alt && digits.first() != Some(&b'0') {
                    digits.insert(0, b'0');
                }
                let zero = s.zero && s.precision.is_none();
                pad(&mut out, &Spec { zero, ..s }, prefix, &digits, true);
            }
            b'p' => {
                let v = args.next()?;
                pad(&mut out, &s, b"", format!("{v:016X}").as_bytes(), false);
            }
            b'c' | b'C' => {
                let raw = args.next()?;
                let ch = if conv == b'C' || len == Len::WideChar {
                    ansi(u32::from(raw as u16))
                } else {
                    raw as u8
                };
                pad(&mut out, &s, b"", &[ch], false);
            }
            b's' | b'S' => {
                let p = args.next()?;
                let max = s.precision.unwrap_or(MAX_STRING);
                let body = if conv == b'S' || len == Len::WideChar {
                    if p == 0 {
                        b"(null)".to_vec()
                    } else {
                        args.wide(p, max)?
                            .into_iter()
                            .map(|u| ansi(u32::from(u)))
                            .collect()
                    }
                } else if p == 0 {
                    b"(null)".to_vec()
                } else {
                    args.string(p, max)?
                };
                let body = &body[..body.len().min(max)];
                pad(&mut out, &s, b"", body, false);
            }
            b'e' | b'E' | b'f' | b'F' | b'g' | b'G' | b'a' | b'A' => {
                let v = f64::from_bits(args.next()?);
                let upper = conv.is_ascii_uppercase();
                let neg = v.is_sign_negative();
                let a = v.abs();
                let prec = s.precision.unwrap_or(6);
                let body = if a.is_infinite() {
                    "inf".to_string()
                } else if a.is_nan() {
                    "nan".to_string()
                } else {
                    match conv.to_ascii_lowercase() {
                        b'e' => fmt_e(a, prec, s.alt, upper),
                        b'f' => {
                            let mut t = format!("{a:.prec$}");
                            if s.alt && prec == 0 {
                                t.push('.');
                            }
                            t
                        }
                        b'g' => fmt_g(a, prec, s.alt, upper),
                        _ => fmt_a(a, s.precision, upper),
                    }
                };
                let body = if upper && !a.is_finite() {
                    body.to_uppercase()
                } else {
                    body
                };
                let zero = s.zero && a.is_finite();
                pad(
                    &mut out,
                    &Spec { zero, ..s },
                    sign_prefix(neg && !a.is_nan(), &s),
                    body.as_bytes(),
                    true,
                );
            }
            _ => return Err(Error::Invalid),
        }
        if out.len() > MAX_STRING * 4 {
            return Err(Error::Invalid);
        }
    }
    Ok(out)
}

/// The flags, width, precision and length of a conversion from `fmt[*pos]` on (a `*` width
/// or precision taken from `args`); `*pos` is left at the conversion character.
fn parse_spec(fmt: &[u8], pos: &mut usize, args: &mut dyn Args) -> Result<(Spec, Len), Error> {
    let at = |i: usize| fmt.get(i).copied().unwrap_or(0);
    let mut i = *pos;
    let mut s = Spec::default();
    loop {
        match at(i) {
            b'-' => s.left = true,
            b'+' => s.plus = true,
            b' ' => s.space = true,
            b'#' => s.alt = true,
            b'0' => s.zero = true,
            _ => break,
        }
        i += 1;
    }
    if at(i) == b'*' {
        i += 1;
        let w = args.next()? as u32 as i32;
        if w < 0 {
            s.left = true;
        }
        s.width = w.unsigned_abs() as usize;
    } else {
        while at(i).is_ascii_digit() {
            s.width = (s.width * 10 + usize::from(at(i) - b'0')).min(MAX_STRING);
            i += 1;
        }
    }
    if at(i) == b'.' {
        i += 1;
        if at(i) == b'*' {
            i += 1;
            let p = args.next()? as u32 as i32;
            s.precision = (p >= 0).then_some(p as usize);
        } else {
            let mut p = 0usize;
            while at(i).is_ascii_digit() {
                p = (p * 10 + usize::from(at(i) - b'0')).min(MAX_STRING);
                i += 1;
            }
            s.precision = Some(p);
        }
    }
    let len = match (at(i), at(i + 1), at(i + 2)) {
        (b'h', b'h', _) => {
            i += 2;
            Len::Char
        }
        (b'h', _, _) => {
            i += 1;
            Len::Short
        }
        (b'l', b'l', _) => {
            i += 2;
            Len::Wide64
        }
        (b'l', _, _) | (b'w', _, _) => {
            i += 1;
            Len::WideChar
        }
        (b'I', b'6', b'4') => {
            i += 3;
            Len::Wide64
        }
        (b'I', b'3', b'2') => {
            i += 3;
            Len::Long
        }
        (b'I', _, _) | (b'j', _, _) | (b'z', _, _) | (b't', _, _) => {
            i += 1;
            Len::Wide64
        }
        (b'L', _, _) => {
            i += 1;
            Len::Default
        }
        _ => Len::Default,
    };
    *pos = i;
    Ok((s, len))
}

fn integer_precision(digits: &mut Vec<u8>, s: &Spec) {
    match s.precision {
        Some(0) if digits == b"0" => digits.clear(),
        Some(p) if p > digits.len() => {
            let z = p - digits.len();
            digits.splice(0..0, std::iter::repeat_n(b'0', z));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Words(Vec<u64>, usize);

    impl Args for Words {
        fn next(&mut self) -> Result<u64, Bad> {
            let v = self.0.get(self.1).copied().ok_or(Bad::Fault)?;
            self.1 += 1;
            Ok(v)
        }
        fn string(&mut self, addr: u64, _max: usize) -> Result<Vec<u8>, Bad> {
            match addr {
                1 => Ok(b"hello".to_vec()),
                _ => Err(Bad::Fault),
            }
        }
        fn wide(&mut self, _addr: u64, _max: usize) -> Result<Vec<u16>, Bad> {
            Ok("w\u{20AC}\u{4E00}".encode_utf16().collect())
        }
    }

    fn f(fmt: &str, args: &[u64]) -> Result<String, Error> {
        format(fmt.as_bytes(), &mut Words(args.to_vec(), 0))
            .map(|v| String::from_utf8_lossy(&v).into_owned())
    }

    /// The conversions print as msvcrt prints them; `%n`, unknown conversions and unreadable
    /// strings are refused.
    #[test]
    fn printf_conversions_print_as_msvcrt_does() {
        assert_eq!(
            f("%d|%5d|%-5d|%05d", &[u64::MAX, 42, 42, 42]),
            Ok("-1|   42|42   |00042".into())
        );
        assert_eq!(
            f("%u %x %#X %o %#o", &[u64::MAX, 255, 255, 8, 8]),
            Ok("4294967295 ff 0XFF 10 010".into())
        );
        assert_eq!(
            f("%llu %I64x %hhd", &[u64::MAX, 1 << 40, 0x1FF]),
            Ok("18446744073709551615 10000000000 -1".into())
        );
        assert_eq!(f("%.3d %.0d|", &[7, 0]), Ok("007 |".into()));
        assert_eq!(
            f("%s|%.2s|%8s|%s", &[1, 1, 1, 0]),
            Ok("hello|he|   hello|(null)".into())
        );
        assert_eq!(f("%ls", &[2]), Ok("w\u{FFFD}?".into()));
        assert_eq!(f("%p", &[0x1400]), Ok("0000000000001400".into()));
        assert_eq!(f("%c%c", &[b'o' as u64, b'k' as u64]), Ok("ok".into()));
        assert_eq!(
            f(
                "%f %.2f %e %E",
                &[
                    1.5f64.to_bits(),
                    2.0f64.to_bits(),
                    150.0f64.to_bits(),
                    0.0f64.to_bits()
                ]
            ),
            Ok("1.500000 2.00 1.500000e+002 0.000000E+000".into())
        );
        assert_eq!(
            f(
                "%g %g %g",
                &[0.0001f64.to_bits(), 1e10f64.to_bits(), 100.0f64.to_bits()]
            ),
            Ok("0.0001 1e+010 100".into())
        );
        assert_eq!(
            f("%a", &[1.0f64.to_bits()]),
            Ok("0x1.0000000000000p+0".into())
        );
        assert_eq!(
            f("%*d|%-*d|%.*s", &[4, 1, 3, 2, 1, 1]),
            Ok("   1|2  |h".into())
        );
        assert_eq!(f("100%%", &[]), Ok("100%".into()));
        assert_eq!(f("%n", &[0]), Err(Error::Invalid));
        assert_eq!(f("%y", &[0]), Err(Error::Invalid));
        assert_eq!(f("%s", &[9]), Err(Error::Fault));
        assert_eq!(f("%d", &[]), Err(Error::Fault));
    }

    /// Code page 1252 both ways: ASCII and Latin-1 map to themselves, 0x80 is the euro sign,
    /// a character 1252 lacks has no byte.
    #[test]
    fn the_ansi_code_page_is_1252() {
        assert_eq!(ansi_to_unicode(b'A'), u16::from(b'A'));
        assert_eq!(ansi_to_unicode(0x80), 0x20AC);
        assert_eq!(ansi_to_unicode(0xE9), 0xE9);
        assert_eq!(unicode_to_ansi(0x20AC), Some(0x80));
        assert_eq!(unicode_to_ansi(0x4E00), None);
        assert_eq!(unicode_to_ansi(u16::from(b'?')), Some(b'?'));
    }
}

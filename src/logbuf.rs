//! A fixed-size, stack-allocated formatting buffer for kernel log lines and panic messages.
//!
//! It never allocates and never fails: text past the end is dropped and the line is marked
//! with `...`. The result is a NUL-terminated C string for `DbgPrintEx(.., "%s", buf)`.
//! Platform-independent so that it is unit-tested on the host.

use core::fmt;

/// Size of a log line, terminator included. Small enough for any kernel stack, the ISR's too.
pub const LOG_LINE: usize = 256;

/// Bytes kept free for the `...\n\0` tail.
const TAIL_ROOM: usize = 5;

/// See the module documentation.
#[derive(Debug)]
pub struct LogBuffer {
    bytes: [u8; LOG_LINE],
    len: usize,
    truncated: bool,
}

impl Default for LogBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl LogBuffer {
    /// An empty buffer.
    pub const fn new() -> Self {
        Self {
            bytes: [0; LOG_LINE],
            len: 0,
            truncated: false,
        }
    }

    /// Terminates the line (`\n`, or `...\n` if text was dropped, then NUL) and returns it,
    /// terminator included.
    pub fn finish(&mut self) -> &[u8] {
        let tail: &[u8] = if self.truncated { b"...\n\0" } else { b"\n\0" };
        // `write_str` keeps TAIL_ROOM bytes free, so the tail always fits.
        let end = self.len.saturating_add(tail.len()).min(LOG_LINE);
        if let Some(dst) = self.bytes.get_mut(self.len..end) {
            dst.copy_from_slice(tail.get(..dst.len()).unwrap_or_default());
        }
        self.bytes.get(..end).unwrap_or(b"\0")
    }

    /// The text written so far, without terminator.
    pub fn text(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or_default()
    }
}

impl fmt::Write for LogBuffer {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = LOG_LINE.saturating_sub(TAIL_ROOM).saturating_sub(self.len);
        let mut n = s.len().min(room);
        if n < s.len() {
            self.truncated = true;
            // Do not cut a UTF-8 sequence in half.
            while n > 0 && !s.is_char_boundary(n) {
                n = n.saturating_sub(1);
            }
        }
        let end = self.len.saturating_add(n);
        if let (Some(dst), Some(src)) = (self.bytes.get_mut(self.len..end), s.as_bytes().get(..n)) {
            for (d, b) in dst.iter_mut().zip(src) {
                // An interior NUL would end the C string early.
                *d = if *b == 0 { b'?' } else { *b };
            }
            self.len = end;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    #[test]
    fn short_line_is_terminated() {
        let mut b = LogBuffer::new();
        let who = "hello";
        write!(b, "rvgpu: {who} {:#x}", 0x10).unwrap();
        assert_eq!(b.finish(), b"rvgpu: hello 0x10\n\0");
    }

    #[test]
    fn long_line_is_truncated_and_marked() {
        let mut b = LogBuffer::new();
        for _ in 0..100 {
            write!(b, "0123456789").unwrap();
        }
        let out = b.finish();
        assert_eq!(out.len(), LOG_LINE);
        assert!(out.ends_with(b"...\n\0"));
        assert_eq!(out.iter().filter(|&&c| c == 0).count(), 1);
    }

    #[test]
    fn utf8_is_not_split_and_nul_is_replaced() {
        let mut b = LogBuffer::new();
        let filler = "x".repeat(LOG_LINE - TAIL_ROOM - 1);
        write!(b, "{filler}é").unwrap();
        assert!(core::str::from_utf8(b.text()).is_ok());
        let mut c = LogBuffer::new();
        write!(c, "a\0b").unwrap();
        assert_eq!(c.finish(), b"a?b\n\0");
    }
}

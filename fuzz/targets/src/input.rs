//! A byte reader over a fuzz input: every read succeeds (zeros once the input is used up), so
//! a target never rejects an input for being short and the fuzzer's mutations all count.

/// Cursor over the input bytes.
#[derive(Debug)]
pub struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    /// A reader at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    /// Whether every byte was read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// The next byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        b
    }

    /// The next `N` bytes (zero-filled past the end).
    pub fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        for b in &mut out {
            *b = self.u8();
        }
        out
    }

    /// Little-endian u16.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }

    /// Little-endian u32.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    /// Little-endian u64.
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    /// Up to `max` bytes, the count read first (one byte, or two when `max` > 255).
    pub fn bytes(&mut self, max: usize) -> &'a [u8] {
        let n = if max > 255 {
            usize::from(self.u16())
        } else {
            usize::from(self.u8())
        };
        let n = n.min(max);
        let start = self.pos.min(self.data.len());
        let end = start.saturating_add(n).min(self.data.len());
        self.pos = self.pos.saturating_add(n);
        &self.data[start..end]
    }

    /// The rest of the input.
    pub fn rest(&mut self) -> &'a [u8] {
        let start = self.pos.min(self.data.len());
        self.pos = self.data.len();
        &self.data[start..]
    }
}

/// Builds inputs in the format [`Input`] reads (seed corpora).
#[derive(Debug, Default, Clone)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    /// An empty input.
    pub fn new() -> Self {
        Self::default()
    }
    /// Appends a byte.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    /// Appends a little-endian u16.
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends a little-endian u32.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends a little-endian u64.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends bytes with their count (the format of [`Input::bytes`] with `max` > 255 when
    /// `wide`).
    pub fn bytes(&mut self, b: &[u8], wide: bool) -> &mut Self {
        if wide {
            self.u16(u16::try_from(b.len()).unwrap_or(u16::MAX));
        } else {
            self.u8(u8::try_from(b.len()).unwrap_or(u8::MAX));
        }
        self.0.extend_from_slice(b);
        self
    }
    /// The input.
    pub fn finish(&self) -> Vec<u8> {
        self.0.clone()
    }
}

//! The debugger's byte stream cut into what the protocol library is given: whole packets with a
//! good checksum, acknowledgements and interrupts. The library ends the session on anything
//! else (line noise between packets, a bad checksum); here noise is dropped and a packet with a
//! bad checksum is refused with `-` for the debugger to send again, as the protocol says.

/// Longest packet taken (the library's own buffer is smaller: a longer packet ends the session
/// there, with its error).
const MAX_PACKET: usize = 64 * 1024;

/// What to do with the bytes read so far.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Frame {
    /// Nothing yet (inside a packet, or noise dropped).
    Nothing,
    /// Give these bytes to the protocol.
    Bytes(Vec<u8>),
    /// A packet's checksum was wrong: answer `-`.
    Nack,
    /// A packet longer than [`MAX_PACKET`]: end the session.
    TooLong,
}

/// Where the stream is.
#[derive(Debug, Default)]
pub(super) struct Framing {
    /// The packet being read, from its `$`; empty between packets.
    packet: Vec<u8>,
    /// Checksum digits still to come (0: not in the checksum).
    sum_left: u8,
}

impl Framing {
    /// Takes one byte.
    pub(super) fn push(&mut self, byte: u8) -> Frame {
        if self.packet.is_empty() {
            return match byte {
                b'$' => {
                    self.packet.push(byte);
                    Frame::Nothing
                }
                b'+' | b'-' | 0x03 => Frame::Bytes(vec![byte]),
                _ => Frame::Nothing,
            };
        }
        if self.packet.len() >= MAX_PACKET {
            self.packet.clear();
            self.sum_left = 0;
            return Frame::TooLong;
        }
        self.packet.push(byte);
        if self.sum_left == 0 {
            if byte == b'#' {
                self.sum_left = 2;
            }
            return Frame::Nothing;
        }
        self.sum_left -= 1;
        if self.sum_left > 0 {
            return Frame::Nothing;
        }
        let packet = std::mem::take(&mut self.packet);
        if checksum_ok(&packet) {
            Frame::Bytes(packet)
        } else {
            Frame::Nack
        }
    }
}

/// `$body#hh`: whether `hh` is the sum of `body`'s bytes modulo 256.
fn checksum_ok(packet: &[u8]) -> bool {
    let Some((body, digits)) = packet
        .strip_prefix(b"$")
        .and_then(|p| p.split_last_chunk::<3>())
    else {
        return false;
    };
    let [b'#', hi, lo] = *digits else {
        return false;
    };
    let hex = |d: u8| char::from(d).to_digit(16);
    let (Some(hi), Some(lo)) = (hex(hi), hex(lo)) else {
        return false;
    };
    let sum = body.iter().fold(0u8, |a, &b| a.wrapping_add(b));
    u32::from(sum) == hi * 16 + lo
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(f: &mut Framing, bytes: &[u8]) -> Vec<Frame> {
        bytes
            .iter()
            .map(|&b| f.push(b))
            .filter(|x| *x != Frame::Nothing)
            .collect()
    }

    /// A good packet passes whole; noise between packets is dropped; acknowledgements and the
    /// interrupt pass alone.
    #[test]
    fn good_packets_pass_and_noise_is_dropped() {
        let mut f = Framing::default();
        assert_eq!(
            feed(&mut f, b"\x00\xffxyz+$g#67\x03"),
            [
                Frame::Bytes(b"+".to_vec()),
                Frame::Bytes(b"$g#67".to_vec()),
                Frame::Bytes(vec![3]),
            ]
        );
    }

    /// A wrong or non-hex checksum is refused; the next packet is read as usual.
    #[test]
    fn bad_checksums_are_refused() {
        let mut f = Framing::default();
        assert_eq!(feed(&mut f, b"$g#00"), [Frame::Nack]);
        assert_eq!(feed(&mut f, b"$g#zz"), [Frame::Nack]);
        assert_eq!(feed(&mut f, b"$g#67"), [Frame::Bytes(b"$g#67".to_vec())]);
    }

    /// A packet that never ends is cut off at the limit.
    #[test]
    fn endless_packets_are_cut_off() {
        let mut f = Framing::default();
        let mut long = vec![b'$'];
        long.resize(MAX_PACKET + 10, b'm');
        assert_eq!(feed(&mut f, &long), [Frame::TooLong]);
    }
}

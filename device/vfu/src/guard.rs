//! The guard between a client and the protocol library: every message the client sends is
//! read here first, in full and within a time limit, checked against what the library can
//! take, and only then passed on (over a socket pair the library serves); the library's
//! replies come back the same way.
//!
//! The library reads each message's fixed part whatever size the header claims, allocates a
//! region access's `count` (up to 4 GiB) before looking at it, and panics on a VERSION shorter
//! than its fixed part or whose string is not NUL-terminated. Here a message is forwarded only
//! if its size is exactly what its command has (REGION_WRITE: fixed part + `count`; VERSION:
//! fixed part + a NUL-terminated string), a region access moves at most [`MAX_DATA`] bytes, and
//! descriptors come only with DMA_MAP and SET_IRQS, at most one. A message that breaks these
//! but has a size the stream can be re-synchronised on ([`MAX_MESSAGE`] or less) is read to its
//! end and answered with an error reply (EINVAL, or E2BIG for a too-large access); one that
//! cannot (size under a header or over the limit) ends the session.
//!
//! Time limits: once a message has started, the rest of it must arrive within
//! [`MESSAGE_TIMEOUT`], and a reply must be taken by the client within the same time (a client
//! that stops mid-message, or stops reading, loses its session instead of holding the server).
//! The first message must come within [`FIRST_MESSAGE_TIMEOUT`] of the connection. Between
//! messages a client may be silent for as long as it likes: a VM whose guest does not touch
//! the device sends nothing.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most a region access moves: the `max_data_xfer_size` the library announces.
pub const MAX_DATA: u32 = 1 << 20;
/// The longest VERSION capability string taken (the library's own is under 200 bytes).
pub const MAX_VERSION_DATA: u32 = 4096;
/// The longest message read (and skipped, if refused): a REGION_WRITE of [`MAX_DATA`].
pub const MAX_MESSAGE: u32 = REGION_ACCESS + MAX_DATA;
/// How long the rest of a started message, or the taking of a reply, may take.
pub const MESSAGE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a new connection may wait before its first message.
pub const FIRST_MESSAGE_TIMEOUT: Duration = Duration::from_secs(10);

const HEADER: u32 = 16;
/// Header, offset (8), region (4), count (4).
const REGION_ACCESS: u32 = HEADER + 16;
/// Header, major (2), minor (2).
const VERSION: u32 = HEADER + 4;
/// Descriptors accepted per message (DMA_MAP's memory, SET_IRQS's one vector).
const MAX_FDS: usize = 1;
/// Descriptors a receive makes room for: more than [`MAX_FDS`], so an excess is seen (and
/// closed) rather than truncated.
const FD_ROOM: usize = 8;

const REPLY: u32 = 1;
const TYPE_MASK: u32 = 0xF;
const ERROR: u32 = 1 << 5;

/// A message header (vfio-user: id, command, size including the header, flags, error).
#[derive(Clone, Copy, Debug)]
struct Header {
    id: u16,
    command: u16,
    size: u32,
    flags: u32,
}

impl Header {
    fn parse(b: &[u8; HEADER as usize]) -> Self {
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Self {
            id: u16_at(0),
            command: u16_at(2),
            size: u32_at(4),
            flags: u32_at(8),
        }
    }

    /// An error reply to this message.
    fn error_reply(&self, errno: i32) -> [u8; HEADER as usize] {
        let mut b = [0u8; HEADER as usize];
        b[0..2].copy_from_slice(&self.id.to_le_bytes());
        b[2..4].copy_from_slice(&self.command.to_le_bytes());
        b[4..8].copy_from_slice(&HEADER.to_le_bytes());
        b[8..12].copy_from_slice(&(REPLY | ERROR).to_le_bytes());
        b[12..16].copy_from_slice(&u32::try_from(errno).unwrap_or(0).to_le_bytes());
        b
    }
}

/// What to do with a message whose header has been read.
#[derive(Debug, PartialEq, Eq)]
enum Plan {
    /// Read the rest (`size - 16` bytes), check it, forward it.
    Forward,
    /// Read the rest and discard it, then answer with this errno.
    Refuse(i32),
    /// The stream cannot be followed past this message: answer, then end the session.
    Drop(i32),
}

/// The fixed size of a command's message, or None for the variable ones (VERSION,
/// REGION_WRITE) and the ones the library does not serve.
fn fixed_size(command: u16) -> Option<u32> {
    Some(match command {
        2 => HEADER + 32,     // DMA_MAP: argsz, flags, offset, address, size
        3 => HEADER + 24,     // DMA_UNMAP: argsz, flags, address, size
        4 | 7 => HEADER + 16, // DEVICE_GET_INFO, GET_IRQ_INFO: four words
        5 => HEADER + 32,     // DEVICE_GET_REGION_INFO: vfio_region_info
        8 => HEADER + 20,     // SET_IRQS: argsz, flags, index, start, count
        9 => REGION_ACCESS,   // REGION_READ
        13 => HEADER,         // DEVICE_RESET
        _ => return None,
    })
}

fn plan(h: &Header, fds: usize) -> Plan {
    if h.size < HEADER || h.size > MAX_MESSAGE {
        return Plan::Drop(libc::EINVAL);
    }
    if h.flags & TYPE_MASK != 0 {
        // A reply (or an unknown type): the server sends no commands to answer.
        return Plan::Refuse(libc::EINVAL);
    }
    let fds_ok = match h.command {
        2 | 8 => fds <= MAX_FDS,
        _ => fds == 0,
    };
    if !fds_ok {
        return Plan::Refuse(libc::EINVAL);
    }
    let size_ok = match (h.command, fixed_size(h.command)) {
        (_, Some(n)) => h.size == n,
        (1, None) => h.size > VERSION && h.size <= VERSION + MAX_VERSION_DATA,
        (10, None) => h.size >= REGION_ACCESS,
        // Commands the library does not serve (it would not read their payload).
        _ => false,
    };
    if !size_ok {
        return Plan::Refuse(libc::EINVAL);
    }
    Plan::Forward
}

/// Checks the whole message of a [`Plan::Forward`]; the errno of an error reply if it fails.
fn check_body(h: &Header, msg: &[u8]) -> Result<(), i32> {
    let word = |i: usize| -> Option<u32> {
        let b = msg.get(i..i + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    match h.command {
        1 => {
            // A NUL-terminated string with no other NUL (the library unwraps it as a C string).
            let s = msg.get(VERSION as usize..).ok_or(libc::EINVAL)?;
            match s.iter().position(|&b| b == 0) {
                Some(i) if i + 1 == s.len() => Ok(()),
                _ => Err(libc::EINVAL),
            }
        }
        9 | 10 => {
            let count = word(28).ok_or(libc::EINVAL)?;
            if count > MAX_DATA {
                return Err(libc::E2BIG);
            }
            if h.command == 10 && u64::from(h.size) != u64::from(REGION_ACCESS) + u64::from(count) {
                return Err(libc::EINVAL);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// What the guard does with a whole message `msg` (header included, as many bytes as it
/// has) that came with `fds` descriptors: `Ok` if it would be forwarded, else the errno of
/// its error reply. The same checks as the relay's, without a socket (fuzzing, tests).
pub fn verdict(msg: &[u8], fds: usize) -> Result<(), i32> {
    let Some(hdr) = msg.get(..HEADER as usize) else {
        return Err(libc::EINVAL);
    };
    let mut b = [0u8; HEADER as usize];
    b.copy_from_slice(hdr);
    let h = Header::parse(&b);
    match plan(&h, fds) {
        Plan::Forward if msg.len() == h.size as usize => check_body(&h, msg),
        Plan::Forward => Err(libc::EINVAL),
        Plan::Refuse(e) | Plan::Drop(e) => Err(e),
    }
}

/// Waits until `fd` is readable, up to `deadline` (None: no limit).
fn wait_readable(fd: RawFd, deadline: Option<Instant>) -> io::Result<()> {
    loop {
        let timeout = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                // Rounded up, so a deadline under a millisecond away is not a busy loop.
                i32::try_from(left.as_millis() + 1).unwrap_or(i32::MAX)
            }
        };
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: FFI call with one valid pollfd; the result is checked.
        let n = unsafe { libc::poll(&mut p, 1, timeout) };
        if n > 0 {
            // Readable, or hung up / in error: the receive that follows tells which.
            return Ok(());
        }
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// Receives up to `buf.len()` bytes and any descriptors sent with them (close-on-exec; all
/// of them kept in `fds`, so none leaks into the process unowned). 0 bytes: end of stream.
fn recv_some(fd: RawFd, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> io::Result<usize> {
    // Room for FD_ROOM descriptors, aligned for cmsghdr.
    let mut cbuf = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero msghdr is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a size.
    let room = unsafe { libc::CMSG_SPACE((FD_ROOM * std::mem::size_of::<RawFd>()) as u32) };
    msg.msg_controllen = (room as usize).min(std::mem::size_of_val(&cbuf));
    let n = loop {
        // SAFETY: `msg` points at `iov` (into `buf`) and `cbuf`, both live and of the lengths
        // given; the result is checked.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 {
            break n;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    // Take ownership of every descriptor received before looking at anything else.
    // SAFETY: the CMSG_* walk stays inside the control buffer the kernel filled (`msg`'s
    // length fields); each SCM_RIGHTS payload is an array of new descriptors that this
    // process now owns and nothing else refers to.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<RawFd>();
                let len = ((*c).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
                for i in 0..len / std::mem::size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "more descriptors than a message may carry",
        ));
    }
    usize::try_from(n).map_err(|_| io::ErrorKind::Other.into())
}

/// Fills `buf` from the stream (with the descriptors that come along) by `deadline`. False if
/// the stream ended before the first byte (and `eof_ok`); an error if it ended inside.
fn recv_full(
    fd: RawFd,
    buf: &mut [u8],
    fds: &mut Vec<OwnedFd>,
    deadline: Option<Instant>,
    eof_ok: bool,
) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        wait_readable(fd, deadline)?;
        let n = recv_some(fd, &mut buf[got..], fds)?;
        if n == 0 {
            if got == 0 && eof_ok {
                return Ok(false);
            }
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        got += n;
    }
    Ok(true)
}

/// Sends all of `buf`, the descriptors with its first byte. Blocking, bounded by the socket's
/// send timeout where one is set (the client's).
fn send_all(fd: RawFd, buf: &[u8], fds: &[OwnedFd]) -> io::Result<()> {
    let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
    let mut cbuf = [0u64; 8];
    let mut sent = 0;
    while sent < buf.len() {
        let rest = &buf[sent..];
        let mut iov = libc::iovec {
            iov_base: rest.as_ptr().cast_mut().cast(),
            iov_len: rest.len(),
        };
        // SAFETY: an all-zero msghdr is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if sent == 0 && !raw.is_empty() {
            let bytes = std::mem::size_of_val(raw.as_slice());
            // SAFETY: CMSG_SPACE / CMSG_LEN only compute sizes.
            let (space, len) =
                unsafe { (libc::CMSG_SPACE(bytes as u32), libc::CMSG_LEN(bytes as u32)) };
            if space as usize > std::mem::size_of_val(&cbuf) {
                return Err(io::ErrorKind::InvalidInput.into());
            }
            msg.msg_control = cbuf.as_mut_ptr().cast();
            msg.msg_controllen = space as usize;
            // SAFETY: the control buffer is `space` bytes, room for one header and `raw`;
            // CMSG_FIRSTHDR of it is non-null and CMSG_DATA points inside it.
            unsafe {
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = len as usize;
                std::ptr::copy_nonoverlapping(
                    raw.as_ptr(),
                    libc::CMSG_DATA(c).cast::<RawFd>(),
                    raw.len(),
                );
            }
        }
        // SAFETY: `msg` points at `iov` (into `buf`) and, if set, `cbuf`; both live. The
        // descriptors are duplicated by the kernel, ours stay owned by `fds`.
        let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        sent += usize::try_from(n).unwrap_or(0);
    }
    Ok(())
}

/// Sets the client socket's send timeout (a reply the client does not take in time ends the
/// session).
pub fn set_send_timeout(client: &UnixStream) -> io::Result<()> {
    client.set_write_timeout(Some(MESSAGE_TIMEOUT))
}

/// How the client's side of a session ended.
#[derive(Debug)]
pub enum Ended {
    /// The client closed the connection between messages.
    Closed,
    /// The client broke the protocol so that the stream could not be followed, stopped
    /// mid-message, or the connection failed.
    Failed(io::Error),
}

/// Relays the client's messages to the library (`inner`), checked, until the client closes
/// or fails; error replies of its own go to `client` under `send` (shared with the replies
/// relayed by [`replies`]).
pub fn requests(client: &UnixStream, inner: &UnixStream, send: &Mutex<()>) -> Ended {
    let cfd = client.as_raw_fd();
    let mut first = true;
    loop {
        let mut hdr = [0u8; HEADER as usize];
        let mut fds = Vec::new();
        // The start of a message may wait (an idle VM sends nothing), except the first.
        let start = first.then(|| Instant::now() + FIRST_MESSAGE_TIMEOUT);
        first = false;
        match wait_readable(cfd, start).and_then(|()| recv_some(cfd, &mut hdr, &mut fds)) {
            Ok(0) => return Ended::Closed,
            Ok(n) => {
                let deadline = Some(Instant::now() + MESSAGE_TIMEOUT);
                if let Err(e) = recv_full(cfd, &mut hdr[n..], &mut fds, deadline, false) {
                    return Ended::Failed(e);
                }
            }
            Err(e) => return Ended::Failed(e),
        }
        let h = Header::parse(&hdr);
        let deadline = Some(Instant::now() + MESSAGE_TIMEOUT);
        let mut plan = plan(&h, fds.len());
        // Descriptors that arrive with the rest of the message count too.
        let mut msg = Vec::new();
        if plan != Plan::Drop(libc::EINVAL) {
            msg.resize(h.size as usize, 0);
            msg[..HEADER as usize].copy_from_slice(&hdr);
            let mut more = Vec::new();
            if let Err(e) = recv_full(cfd, &mut msg[HEADER as usize..], &mut more, deadline, false)
            {
                return Ended::Failed(e);
            }
            if !more.is_empty() {
                plan = Plan::Refuse(libc::EINVAL);
            }
        }
        if plan == Plan::Forward {
            if let Err(errno) = check_body(&h, &msg) {
                plan = Plan::Refuse(errno);
            }
        }
        match plan {
            Plan::Forward => {
                if let Err(e) = send_all(inner.as_raw_fd(), &msg, &fds) {
                    return Ended::Failed(e);
                }
            }
            Plan::Refuse(errno) | Plan::Drop(errno) => {
                drop(fds);
                let reply = h.error_reply(errno);
                let sent = {
                    let _g = send.lock().unwrap_or_else(|e| e.into_inner());
                    send_all(cfd, &reply, &[])
                };
                if let Err(e) = sent {
                    return Ended::Failed(e);
                }
                if matches!(plan, Plan::Drop(_)) {
                    return Ended::Failed(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("message size {} cannot be followed", h.size),
                    ));
                }
            }
        }
    }
}

/// Relays the library's replies (from `inner`) to the client, whole, under `send`, until the
/// library's side closes or the client does not take a reply in time.
pub fn replies(client: &UnixStream, inner: &UnixStream, send: &Mutex<()>) -> io::Result<()> {
    let ifd = inner.as_raw_fd();
    loop {
        let mut hdr = [0u8; HEADER as usize];
        let mut fds = Vec::new();
        if !recv_full(ifd, &mut hdr, &mut fds, None, true)? {
            return Ok(());
        }
        let h = Header::parse(&hdr);
        // The library's own replies: a region read's data at most, with its header.
        if h.size < HEADER || h.size > MAX_MESSAGE + 4096 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "reply size out of range",
            ));
        }
        let mut msg = vec![0u8; h.size as usize];
        msg[..HEADER as usize].copy_from_slice(&hdr);
        recv_full(ifd, &mut msg[HEADER as usize..], &mut fds, None, false)?;
        let _g = send.lock().unwrap_or_else(|e| e.into_inner());
        send_all(client.as_raw_fd(), &msg, &fds)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(command: u16, size: u32) -> Header {
        Header {
            id: 1,
            command,
            size,
            flags: 0,
        }
    }

    #[test]
    fn sizes_that_cannot_be_followed_end_the_session() {
        assert_eq!(plan(&header(9, 15), 0), Plan::Drop(libc::EINVAL));
        assert_eq!(plan(&header(10, u32::MAX), 0), Plan::Drop(libc::EINVAL));
        assert_eq!(plan(&header(1, 8), 0), Plan::Drop(libc::EINVAL));
    }

    #[test]
    fn fixed_messages_must_have_their_exact_size() {
        assert_eq!(plan(&header(9, 32), 0), Plan::Forward);
        assert_eq!(plan(&header(9, 40), 0), Plan::Refuse(libc::EINVAL));
        assert_eq!(plan(&header(13, 16), 0), Plan::Forward);
        assert_eq!(plan(&header(2, 48), 1), Plan::Forward);
        assert_eq!(plan(&header(2, 48), 2), Plan::Refuse(libc::EINVAL));
        assert_eq!(plan(&header(9, 32), 1), Plan::Refuse(libc::EINVAL));
        assert_eq!(plan(&header(11, 16), 0), Plan::Refuse(libc::EINVAL));
        assert_eq!(plan(&header(1, 20), 0), Plan::Refuse(libc::EINVAL));
    }

    #[test]
    fn region_counts_and_version_strings_are_checked_before_forwarding() {
        let mut read = vec![0u8; 32];
        read[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(check_body(&header(9, 32), &read), Err(libc::E2BIG));
        let mut write = vec![0u8; 36];
        write[28..32].copy_from_slice(&8u32.to_le_bytes());
        assert_eq!(check_body(&header(10, 36), &write), Err(libc::EINVAL));
        write[28..32].copy_from_slice(&4u32.to_le_bytes());
        assert_eq!(check_body(&header(10, 36), &write), Ok(()));
        let mut version = vec![0u8; 20];
        version.extend_from_slice(b"{}\0");
        assert_eq!(check_body(&header(1, 23), &version), Ok(()));
        version[21] = 0;
        assert_eq!(check_body(&header(1, 23), &version), Err(libc::EINVAL));
        let unterminated = [vec![0u8; 20], b"{}".to_vec()].concat();
        assert_eq!(check_body(&header(1, 22), &unterminated), Err(libc::EINVAL));
    }
}

//! TCP with kernel receive timestamps.
//!
//! A user-space timestamp taken when a task gets round to reading a socket includes however
//! long that task waited for a CPU: on a busy two-core machine driving hundreds of streams,
//! milliseconds. The kernel stamps every incoming segment when it enters the receive path
//! (`SO_TIMESTAMPNS`), and `recvmsg` hands back the stamp of the last segment it read. Both
//! ends of a yardstick measurement read through [`StampedTcp`]: the load generator timestamps
//! each SSE event with the arrival of the bytes that carried it, and the simulator starts its
//! latency model when the request reached its socket — so the client measures the server, not
//! its own scheduling, and the simulator's log is the truth on the wire.
//!
//! Where the socket option or the control message is unavailable (another OS, a kernel
//! without it), reads work as plain reads and [`RxStamp::get`] falls back to "now". Linux
//! turns on receive stamping for the whole machine lazily (a deferred static-key switch), so
//! the first segments after the first socket asks for it may arrive unstamped; those reads
//! also fall back to "now".

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use tokio::io::{AsyncWrite, Interest};
use tokio::net::TcpStream;

use crate::clock::Clock;

/// The arrival time of the last bytes read from one connection, shared between the stream
/// and whoever consumes what it reads.
#[derive(Debug, Clone)]
pub struct RxStamp {
    last: Arc<AtomicU64>,
    clock: Clock,
}

impl RxStamp {
    /// A stamp with nothing received yet.
    pub fn new(clock: Clock) -> Self {
        RxStamp {
            last: Arc::new(AtomicU64::new(0)),
            clock,
        }
    }

    /// The kernel's arrival time (in `clock`'s nanoseconds) of the last bytes read, if the
    /// kernel gave one.
    pub fn kernel(&self) -> Option<u64> {
        match self.last.load(Ordering::Acquire) {
            0 => None,
            t => Some(t),
        }
    }

    /// When the bytes just read arrived: the kernel's stamp when there is one (never later
    /// than now), else now.
    pub fn get(&self) -> u64 {
        let now = self.clock.now_ns();
        self.kernel().map_or(now, |t| t.min(now))
    }
}

/// A TCP stream whose reads record the kernel's receive timestamp into an [`RxStamp`].
#[derive(Debug)]
pub struct StampedTcp {
    tcp: TcpStream,
    stamp: RxStamp,
    enabled: bool,
}

impl StampedTcp {
    /// Wraps `tcp`, asking the kernel for receive timestamps (nanosecond resolution).
    pub fn new(tcp: TcpStream, clock: Clock) -> Self {
        let enabled = enable_timestamps(&tcp);
        StampedTcp {
            tcp,
            stamp: RxStamp::new(clock),
            enabled,
        }
    }

    /// The stamp this stream updates on every read.
    pub fn stamp(&self) -> RxStamp {
        self.stamp.clone()
    }

    /// Whether the kernel accepted the timestamp option.
    pub fn kernel_stamps(&self) -> bool {
        self.enabled
    }

    /// The underlying stream.
    pub fn get_ref(&self) -> &TcpStream {
        &self.tcp
    }
}

#[cfg(target_os = "linux")]
fn enable_timestamps(tcp: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor and a c_int option value of the stated size.
    let rc = unsafe {
        libc::setsockopt(
            tcp.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}

#[cfg(not(target_os = "linux"))]
fn enable_timestamps(_: &TcpStream) -> bool {
    false
}

/// `recvmsg` into `dst`; the byte count and the `CLOCK_REALTIME` nanoseconds of the last
/// segment read, when the kernel attached them.
fn recv_stamped(tcp: &TcpStream, dst: &mut [MaybeUninit<u8>]) -> io::Result<(usize, Option<u64>)> {
    use std::os::fd::AsRawFd;
    let mut iov = libc::iovec {
        iov_base: dst.as_mut_ptr().cast(),
        iov_len: dst.len(),
    };
    // Room for one timespec control message (u64s keep it aligned for cmsghdr).
    let mut control = [0u64; 8];
    // SAFETY: an all-zero msghdr is a valid empty header; the pointers set below outlive the
    // call; the kernel writes at most `msg_controllen` bytes of control data and at most
    // `iov_len` bytes into `dst`, whose bytes then count as initialised up to the return value.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        let n = libc::recvmsg(tcp.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut stamp = None;
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if is_timestamp(&*cmsg) {
                let ts: libc::timespec =
                    std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                if ts.tv_sec > 0 {
                    stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        Ok((n as usize, stamp))
    }
}

#[cfg(target_os = "linux")]
fn is_timestamp(c: &libc::cmsghdr) -> bool {
    c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_TIMESTAMPNS
}

#[cfg(not(target_os = "linux"))]
fn is_timestamp(_: &libc::cmsghdr) -> bool {
    false
}

impl Read for StampedTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            ready!(this.tcp.poll_read_ready(cx))?;
            // SAFETY: `recv_stamped` only writes into the slice, and we advance by exactly the
            // number of bytes the kernel reported written.
            let dst = unsafe { buf.as_mut() };
            let res = this
                .tcp
                .try_io(Interest::READABLE, || recv_stamped(&this.tcp, dst));
            match res {
                Ok((n, stamp)) => {
                    // A read without a stamp must not inherit the previous read's.
                    let ns = stamp.map_or(0, |rt| this.stamp.clock.from_realtime(rt).max(1));
                    this.stamp.last.store(ns, Ordering::Release);
                    // SAFETY: the kernel initialised `n` bytes of `dst`.
                    unsafe { buf.advance(n) };
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl Write for StampedTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write_vectored(cx, bufs)
    }
}

impl Connection for StampedTcp {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

//! TCP bandwidth and round-trip time, on loopback by default or to a `--peer` running
//! `yardstick bench micro network --listen`.
//!
//! Protocol (version 1): on accept the listener sends the 8-byte greeting `YSTICK01`; the
//! client then sends commands of one op byte and a little-endian `u64` argument:
//! `B n` — the client streams `n` bytes, the listener answers one byte `K` after the last;
//! `P n` — `n` ping-pongs of 64-byte messages echoed back; `Q` — close. Bandwidth is bytes ×
//! 8 over the time from the first byte sent to the acknowledgement received; RTT is the time of
//! each ping-pong (`TCP_NODELAY` on both sides). Each replicate uses a fresh connection. Every
//! socket has a timeout, so neither side can hang.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::trial::{MetricSamples, Stat, iterate, summarize};
use super::{MicroConfig, MicroError, MicroReport, TrialPolicy};

/// Default bytes per bandwidth iteration: 256 MiB.
pub const DEFAULT_TRANSFER_BYTES: u64 = 256 << 20;
/// Ping-pongs per RTT iteration when no time budget is given.
pub const DEFAULT_PINGS: u64 = 1000;
/// Default measured iterations per replicate.
pub const DEFAULT_ITERATIONS: usize = 10;
/// Default listener port of `--listen` and `--peer` without a port.
pub const DEFAULT_PORT: u16 = 9753;
/// The greeting that identifies a yardstick listener.
pub const GREETING: &[u8; 8] = b"YSTICK01";

const PING_BYTES: usize = 64;
const CHUNK: usize = 256 << 10;
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// A running listener.
#[derive(Debug)]
pub struct Listener {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    connections: Arc<AtomicU64>,
    handle: Option<JoinHandle<()>>,
}

impl Listener {
    /// Binds `addr` (e.g. `127.0.0.1:0`) and serves connections on a background thread.
    pub fn bind(addr: &str) -> Result<Self, MicroError> {
        let listener =
            TcpListener::bind(addr).map_err(|e| MicroError::io(format!("binding {addr}"), e))?;
        let local = listener
            .local_addr()
            .map_err(|e| MicroError::io("local address", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| MicroError::io("non-blocking listener", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicU64::new(0));
        let handle = {
            let stop = stop.clone();
            let connections = connections.clone();
            std::thread::spawn(move || accept_loop(&listener, &stop, &connections))
        };
        Ok(Self {
            addr: local,
            stop,
            connections,
            handle: Some(handle),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Stops accepting and waits for the accept loop to end (open connections end at their
    /// client's `Q`, close or timeout).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(listener: &TcpListener, stop: &AtomicBool, connections: &AtomicU64) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                connections.fetch_add(1, Ordering::Relaxed);
                std::thread::spawn(move || {
                    let _ = serve_connection(stream);
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

fn serve_connection(mut s: TcpStream) -> std::io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))?;
    s.write_all(GREETING)?;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let mut header = [0u8; 9];
        if s.read_exact(&mut header).is_err() {
            return Ok(());
        }
        let arg = u64::from_le_bytes(header[1..].try_into().expect("8 bytes"));
        match header[0] {
            b'B' => {
                let mut left = arg;
                while left > 0 {
                    let want = left.min(CHUNK as u64) as usize;
                    let got = s.read(&mut buf[..want])?;
                    if got == 0 {
                        return Ok(());
                    }
                    left -= got as u64;
                }
                s.write_all(b"K")?;
            }
            b'P' => {
                let mut msg = [0u8; PING_BYTES];
                for _ in 0..arg {
                    s.read_exact(&mut msg)?;
                    s.write_all(&msg)?;
                }
            }
            _ => {
                let _ = s.shutdown(Shutdown::Both);
                return Ok(());
            }
        }
    }
}

/// A client connection to a listener.
struct Client {
    s: TcpStream,
}

impl Client {
    fn connect(addr: SocketAddr) -> Result<Self, MicroError> {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .map_err(|e| MicroError::io(format!("connecting to {addr}"), e))?;
        let io = |e| MicroError::io(format!("socket options of {addr}"), e);
        s.set_nodelay(true).map_err(io)?;
        s.set_read_timeout(Some(IO_TIMEOUT)).map_err(io)?;
        s.set_write_timeout(Some(IO_TIMEOUT)).map_err(io)?;
        let mut greeting = [0u8; 8];
        s.read_exact(&mut greeting)
            .map_err(|e| MicroError::io(format!("reading the greeting of {addr}"), e))?;
        if &greeting != GREETING {
            return Err(MicroError::Protocol(format!(
                "{addr} is not a yardstick listener (greeting {greeting:?}); start one with \
                 `yardstick bench micro network --listen`"
            )));
        }
        Ok(Self { s })
    }

    fn command(&mut self, op: u8, arg: u64) -> Result<(), MicroError> {
        let mut header = [0u8; 9];
        header[0] = op;
        header[1..].copy_from_slice(&arg.to_le_bytes());
        self.s
            .write_all(&header)
            .map_err(|e| MicroError::io("sending a command", e))
    }

    /// Streams `bytes`, returns Gbit/s.
    fn bandwidth(&mut self, bytes: u64, chunk: &[u8]) -> Result<f64, MicroError> {
        let t = Instant::now();
        self.command(b'B', bytes)?;
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            self.s
                .write_all(&chunk[..n])
                .map_err(|e| MicroError::io("streaming", e))?;
            left -= n as u64;
        }
        let mut ack = [0u8; 1];
        self.s
            .read_exact(&mut ack)
            .map_err(|e| MicroError::io("reading the acknowledgement", e))?;
        if ack[0] != b'K' {
            return Err(MicroError::Protocol(format!("bad acknowledgement {ack:?}")));
        }
        Ok(bytes as f64 * 8.0 / t.elapsed().as_secs_f64() / 1e9)
    }

    /// `count` ping-pongs; pushes each RTT in µs.
    fn pings(&mut self, count: u64, out: &mut Vec<f64>) -> Result<(), MicroError> {
        self.command(b'P', count)?;
        let mut msg = [0x5au8; PING_BYTES];
        for i in 0..count {
            msg[0] = i as u8;
            let t = Instant::now();
            self.s
                .write_all(&msg)
                .map_err(|e| MicroError::io("ping", e))?;
            self.s
                .read_exact(&mut msg)
                .map_err(|e| MicroError::io("pong", e))?;
            out.push(t.elapsed().as_secs_f64() * 1e6);
            if msg[0] != i as u8 {
                return Err(MicroError::Protocol("pong out of order".into()));
            }
        }
        Ok(())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.command(b'Q', 0);
    }
}

/// Resolves `HOST[:PORT]` (default port [`DEFAULT_PORT`]).
pub fn resolve_peer(peer: &str) -> Result<SocketAddr, MicroError> {
    let with_port = if peer.parse::<SocketAddr>().is_ok()
        || peer
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.contains(':') && p.parse::<u16>().is_ok())
    {
        peer.to_owned()
    } else {
        format!("{peer}:{DEFAULT_PORT}")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| MicroError::InvalidConfig(format!("cannot resolve peer {peer}: {e}")))?
        .next()
        .ok_or_else(|| MicroError::InvalidConfig(format!("peer {peer} resolves to no address")))
}

/// Runs the network benchmark.
pub fn run(config: &MicroConfig, policy: &TrialPolicy) -> Result<MicroReport, MicroError> {
    let bytes = config
        .sizes
        .first()
        .copied()
        .unwrap_or(DEFAULT_TRANSFER_BYTES);
    if bytes == 0 {
        return Err(MicroError::InvalidConfig(
            "network transfer size must be > 0 bytes".into(),
        ));
    }
    let measured = policy.iterations_or(DEFAULT_ITERATIONS);
    let prefix = config.prefix();
    // Our own listener on loopback unless the user named a peer.
    let own = match &config.peer {
        None => Some(Listener::bind("127.0.0.1:0")?),
        Some(_) => None,
    };
    let addr = match (&own, &config.peer) {
        (Some(l), _) => l.addr(),
        (None, Some(p)) => resolve_peer(p)?,
        (None, None) => unreachable!("a listener or a peer"),
    };
    let target = if own.is_some() { "loopback" } else { "peer" };
    let mut bw = MetricSamples::new(format!("{prefix}.bandwidth"), "Gbit/s", true, Stat::Median);
    let mut rtt = MetricSamples::new(format!("{prefix}.rtt"), "us", false, Stat::Median);
    let mut rtt_p99 = MetricSamples::new(
        format!("{prefix}.rtt.p99"),
        "us",
        false,
        Stat::Quantile(0.99),
    );
    for m in [&mut bw, &mut rtt, &mut rtt_p99] {
        m.param("target", target);
        m.param("address", addr.to_string());
        m.param("protocol", "tcp");
    }
    bw.param("transfer_bytes", bytes);
    rtt.param("message_bytes", PING_BYTES);
    let chunk = vec![0xa5u8; CHUNK];
    for _ in 0..policy.replicates {
        let mut client = Client::connect(addr)?;
        let (s, w) = iterate(policy, measured, || client.bandwidth(bytes, &chunk))?;
        bw.push_replicate(s, w);
        let mut all = Vec::new();
        let mut per_iter = Vec::new();
        let (s, w) = iterate(policy, measured, || {
            let before = all.len();
            match config.duration {
                Some(budget) => {
                    let t = Instant::now();
                    while t.elapsed() < budget || all.len() == before {
                        client.pings(100, &mut all)?;
                    }
                }
                None => client.pings(DEFAULT_PINGS, &mut all)?,
            }
            per_iter.push(all.len() - before);
            yardstick_stats::percentile::percentile(&all[before..], 0.5).map_err(MicroError::from)
        })?;
        let skip: usize = per_iter[..w].iter().sum();
        rtt.push_replicate(s, w);
        rtt_p99.push_replicate(all[skip..].to_vec(), 0);
    }
    drop(own);
    Ok(MicroReport {
        results: vec![
            summarize(&bw, policy)?,
            summarize(&rtt, policy)?,
            summarize(&rtt_p99, policy)?,
        ],
        ..MicroReport::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_resolve_with_default_port() {
        assert_eq!(
            resolve_peer("127.0.0.1").unwrap(),
            format!("127.0.0.1:{DEFAULT_PORT}").parse().unwrap()
        );
        assert_eq!(
            resolve_peer("127.0.0.1:5000").unwrap(),
            "127.0.0.1:5000".parse().unwrap()
        );
        assert!(resolve_peer("[::1]:5000").is_ok());
    }

    #[test]
    fn a_foreign_server_is_refused() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            s.write_all(b"SSH-2.0-").unwrap();
        });
        let err = Client::connect(addr).err().unwrap();
        assert!(matches!(err, MicroError::Protocol(_)), "{err}");
        h.join().unwrap();
    }
}

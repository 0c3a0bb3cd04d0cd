//! Kernel receive timestamps on a real loopback connection.

use std::future::poll_fn;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::time::Duration;

use hyper::rt::{Read, ReadBuf};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use yardstick_timing::{Clock, StampedTcp};

async fn read_some(s: &mut StampedTcp) -> Vec<u8> {
    let mut storage = [MaybeUninit::<u8>::uninit(); 64];
    let mut buf = ReadBuf::uninit(&mut storage);
    poll_fn(|cx| Pin::new(&mut *s).poll_read(cx, buf.unfilled()))
        .await
        .unwrap();
    buf.filled().to_vec()
}

#[tokio::test(flavor = "current_thread")]
async fn reads_carry_the_arrival_time_not_the_read_time() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = TcpStream::connect(addr).await.unwrap();
    let (server, _) = listener.accept().await.unwrap();
    let clock = Clock::new();
    let mut server = StampedTcp::new(server, clock);
    let stamp = server.stamp();
    assert_eq!(stamp.kernel(), None, "nothing read yet");
    // Linux switches receive stamping on for the machine from a work queue, shortly after the
    // first socket asks; segments before that are unstamped (and read as "now"). Probe until a
    // segment comes back stamped (a loaded machine runs the work queue late), up to 5 s.
    if cfg!(target_os = "linux") {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while stamp.kernel().is_none() && std::time::Instant::now() < deadline {
            client.write_all(b"probe").await.unwrap();
            server.get_ref().readable().await.unwrap();
            assert_eq!(read_some(&mut server).await, b"probe");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    client.write_all(b"first").await.unwrap();
    server.get_ref().readable().await.unwrap();
    // The bytes are in the socket; the reader is late by at least 30 ms.
    tokio::time::sleep(Duration::from_millis(30)).await;
    let before_read = clock.now_ns();
    assert_eq!(read_some(&mut server).await, b"first");

    if cfg!(target_os = "linux") {
        assert!(server.kernel_stamps(), "SO_TIMESTAMPNS refused");
        let arrived = stamp.kernel().expect("the kernel stamped the segment");
        assert!(
            before_read - arrived >= 30_000_000,
            "stamp is the read time, not the arrival: {} ns before the read",
            before_read - arrived
        );
        assert_eq!(stamp.get(), arrived);
    } else {
        assert!(stamp.get() >= before_read);
    }

    // A second segment moves the stamp forward.
    let first = stamp.get();
    client.write_all(b"second").await.unwrap();
    server.get_ref().readable().await.unwrap();
    assert_eq!(read_some(&mut server).await, b"second");
    assert!(stamp.get() > first);

    // End of stream reads as zero bytes, not an error.
    drop(client);
    server.get_ref().readable().await.unwrap();
    assert_eq!(read_some(&mut server).await, b"");
}

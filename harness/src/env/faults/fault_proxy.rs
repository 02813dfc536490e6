//! A TCP fault proxy in the path into a component, for `network` faults
//! (`tc netem` needs the kernel's `sch_netem`, which these machines lack,
//! and privileges; a proxy needs neither).
//!
//! The environment puts one in front of every component a `network` fault
//! names, from the variant's start: its peers connect to the proxy, which
//! forwards to the component. Until a fault is applied it only forwards;
//! while one is in force, each chunk read is held `delay` ± `jitter`
//! (uniform), a lost one (`loss` %) another 200 ms, as TCP's
//! retransmission would, and sent no faster than `bandwidth`; `reset` % of
//! new connections are reset at once (RST). Settings are read per chunk, so
//! a fault reaches connections already open. Undoing the fault sets the
//! proxy back to forwarding; it stops with the variant (and dies with the
//! harness: nothing of it outlives a SIGKILL).

use rand::Rng;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What a `network` fault does to the path; the default forwards untouched.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Impairment {
    pub delay: Duration,
    pub jitter: Duration,
    /// Share of chunks lost (0-1), each resent 200 ms later.
    pub loss: f64,
    /// Bytes per second, per direction and connection.
    pub bandwidth: Option<u64>,
    /// Share of new connections reset (0-1).
    pub reset: f64,
}

impl Impairment {
    /// A `network` fault's values as the proxy applies them (percentages as
    /// shares, kilobytes as bytes).
    pub(crate) fn of(n: &crate::experiment::faults::NetworkFault) -> Impairment {
        Impairment {
            delay: n.delay.unwrap_or_default(),
            jitter: n.jitter.unwrap_or_default(),
            loss: n.loss / 100.0,
            bandwidth: n.bandwidth.map(|kb| kb * 1000),
            reset: n.reset / 100.0,
        }
    }
}

/// How long TCP waits before resending a lost segment (its minimum RTO).
const RETRANSMIT: Duration = Duration::from_millis(200);

/// A running fault proxy.
pub(crate) struct FaultProxy {
    pub addr: SocketAddr,
    settings: watch::Sender<Impairment>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FaultProxy {
    /// Listens on a fresh loopback port, forwarding to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> std::io::Result<FaultProxy> {
        FaultProxy::start_on([127, 0, 0, 1].into(), upstream).await
    }

    /// Listens on a fresh port of `ip` (a Docker network's gateway address,
    /// which its containers reach), forwarding to `upstream`.
    pub(crate) async fn start_on(
        ip: std::net::IpAddr,
        upstream: SocketAddr,
    ) -> std::io::Result<FaultProxy> {
        let listener = TcpListener::bind((ip, 0)).await?;
        let addr = listener.local_addr()?;
        let (settings, rx) = watch::channel(Impairment::default());
        let task = tokio::spawn(accept_loop(listener, upstream, rx));
        Ok(FaultProxy {
            addr,
            settings,
            task,
        })
    }

    pub(crate) fn set(&self, i: Impairment) {
        self.settings.send_replace(i);
    }

    /// Back to forwarding untouched.
    pub(crate) fn clear(&self) {
        self.set(Impairment::default());
    }

    pub(crate) fn current(&self) -> Impairment {
        *self.settings.borrow()
    }
}

async fn accept_loop(listener: TcpListener, upstream: SocketAddr, rx: watch::Receiver<Impairment>) {
    loop {
        let Ok((inbound, _)) = listener.accept().await else {
            continue;
        };
        let reset = rx.borrow().reset;
        if reset > 0.0 && rand::rng().random::<f64>() < reset {
            // RST instead of FIN: linger 0, then close (with linger 0 the
            // close does not block).
            if let Ok(std) = inbound.into_std() {
                let _ = socket_linger_zero(&std);
            }
            continue;
        }
        let rx = rx.clone();
        tokio::spawn(async move {
            let Ok(outbound) = TcpStream::connect(upstream).await else {
                return;
            };
            let _ = inbound.set_nodelay(true);
            let _ = outbound.set_nodelay(true);
            let (ri, wi) = inbound.into_split();
            let (ro, wo) = outbound.into_split();
            tokio::join!(pump(ri, wo, rx.clone()), pump(ro, wi, rx));
        });
    }
}

/// SO_LINGER 0 on `s`, so that closing it sends RST.
fn socket_linger_zero(s: &std::net::TcpStream) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on an open socket with a correctly sized linger.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&l as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Copies one direction, chunk by chunk, impaired as the settings say.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    rx: watch::Receiver<Impairment>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let hold = hold_for(&rx.borrow(), n);
        if !hold.is_zero() {
            tokio::time::sleep(hold).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// How long a chunk of `n` bytes is held under `i`.
fn hold_for(i: &Impairment, n: usize) -> Duration {
    let mut rng = rand::rng();
    let mut hold = i.delay;
    if !i.jitter.is_zero() {
        let j = i.jitter.as_secs_f64();
        let d = (hold.as_secs_f64() + rng.random_range(-j..=j)).max(0.0);
        hold = Duration::from_secs_f64(d);
    }
    if i.loss > 0.0 && rng.random::<f64>() < i.loss {
        hold += RETRANSMIT;
    }
    if let Some(bw) = i.bandwidth.filter(|b| *b > 0) {
        hold += Duration::from_secs_f64(n as f64 / bw as f64);
    }
    hold
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarding_holds_nothing_and_faults_add_up() {
        assert_eq!(hold_for(&Impairment::default(), 1000), Duration::ZERO);
        let i = Impairment {
            delay: Duration::from_millis(50),
            loss: 1.0,
            bandwidth: Some(1000),
            ..Impairment::default()
        };
        assert_eq!(hold_for(&i, 500), Duration::from_millis(50 + 200 + 500));
        let j = Impairment {
            delay: Duration::from_millis(50),
            jitter: Duration::from_millis(10),
            ..Impairment::default()
        };
        for _ in 0..100 {
            let h = hold_for(&j, 1);
            assert!(
                h >= Duration::from_millis(40) && h <= Duration::from_millis(60),
                "{h:?}"
            );
        }
    }

    #[tokio::test]
    async fn delays_while_set_and_forwards_after() {
        let echo = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up = echo.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = echo.accept().await {
                tokio::spawn(async move {
                    let mut b = [0u8; 64];
                    while let Ok(n) = s.read(&mut b).await {
                        if n == 0 || s.write_all(&b[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        let p = FaultProxy::start(up).await.unwrap();
        let round_trip = |addr| async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let t = std::time::Instant::now();
            s.write_all(b"ping").await.unwrap();
            let mut b = [0u8; 4];
            s.read_exact(&mut b).await.unwrap();
            assert_eq!(&b, b"ping");
            t.elapsed()
        };
        p.set(Impairment {
            delay: Duration::from_millis(100),
            ..Impairment::default()
        });
        assert!(round_trip(p.addr).await >= Duration::from_millis(200));
        p.clear();
        assert!(round_trip(p.addr).await < Duration::from_millis(100));
        p.set(Impairment {
            reset: 1.0,
            ..Impairment::default()
        });
        let mut s = TcpStream::connect(p.addr).await.unwrap();
        let _ = s.write_all(b"x").await;
        let mut b = [0u8; 1];
        assert!(
            !matches!(s.read(&mut b).await, Ok(1)),
            "a reset connection carries nothing"
        );
    }
}

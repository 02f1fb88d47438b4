//! PHI guard: refuse LLM endpoints outside loopback and private networks.
//!
//! ```text
//!   endpoint URL ──► host ──► IP literal? ──yes──► classify
//!                      │                              ▲
//!                      └──no──► resolve (all addrs) ──┘   every address must be private,
//!                                                         else refuse (names the flag)
//! ```
//!
//! Allowed: IPv4 loopback 127/8, RFC 1918 (10/8, 172.16/12, 192.168/16), link-local
//! 169.254/16; IPv6 loopback `::1`, unique-local `fc00::/7`, link-local `fe80::/10`, and
//! IPv4-mapped forms of the allowed IPv4 ranges. Everything else needs `allow_remote`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

use url::{Host, Url};

use crate::error::{LlmError, Result};

/// Refuses `endpoint` unless every address it names is loopback or private, or `allow_remote`
/// is set (`--allow-remote-llm`, config key `cxrlake.allow_remote_llm`).
pub fn check_endpoint(endpoint: &Url, allow_remote: bool) -> Result<()> {
    checked_addresses(endpoint, allow_remote).map(drop)
}

/// Like [`check_endpoint`], also returning the resolved addresses of a host name so the HTTP
/// client can be pinned to exactly the addresses that were checked.
pub(crate) fn checked_addresses(
    endpoint: &Url,
    allow_remote: bool,
) -> Result<Option<(String, Vec<SocketAddr>)>> {
    if allow_remote {
        return Ok(None);
    }
    let refuse = |reason: String| LlmError::RemoteEndpoint {
        endpoint: endpoint.to_string(),
        reason,
    };
    let port = endpoint.port_or_known_default().unwrap_or(80);
    match endpoint.host() {
        None => Err(refuse("the URL has no host".into())),
        Some(Host::Ipv4(ip)) => check_ip(IpAddr::V4(ip)).map_err(refuse).map(|()| None),
        Some(Host::Ipv6(ip)) => check_ip(IpAddr::V6(ip)).map_err(refuse).map(|()| None),
        Some(Host::Domain(domain)) => {
            let addresses: Vec<SocketAddr> = (domain, port)
                .to_socket_addrs()
                .map_err(|error| refuse(format!("cannot resolve {domain} to check it: {error}")))?
                .collect();
            if addresses.is_empty() {
                return Err(refuse(format!("{domain} resolves to no address")));
            }
            for address in &addresses {
                check_ip(address.ip())
                    .map_err(|reason| refuse(format!("{domain} resolves to {reason}")))?;
            }
            Ok(Some((domain.to_owned(), addresses)))
        }
    }
}

/// `Ok` for loopback/private/link-local addresses, else the reason as text.
fn check_ip(ip: IpAddr) -> std::result::Result<(), String> {
    if is_private(ip) {
        Ok(())
    } else {
        Err(format!("{ip} is not a loopback or private-network address"))
    }
}

/// Whether `ip` is loopback, private (RFC 1918 / IPv6 ULA) or link-local.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_private_v4(v4),
            None => is_private_v6(v6),
        },
    }
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    ip.is_loopback() || ip.is_private() || ip.is_link_local()
}

fn is_private_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(url: &str, allow_remote: bool) -> Result<()> {
        check_endpoint(&Url::parse(url).expect("url"), allow_remote)
    }

    #[test]
    fn loopback_and_private_ipv4_are_allowed() {
        for url in [
            "http://127.0.0.1:8000/v1",
            "http://127.255.255.254/",
            "http://10.0.0.1/v1",
            "http://10.255.255.255/",
            "http://172.16.0.1/",
            "http://172.31.255.255/",
            "http://192.168.1.20:11434/v1",
            "http://169.254.10.10/",
            "https://192.168.0.1/",
        ] {
            assert!(check(url, false).is_ok(), "{url} should be allowed");
        }
    }

    #[test]
    fn public_ipv4_is_refused_and_names_the_flag() {
        for url in [
            "http://8.8.8.8/v1",
            "http://172.15.255.255/",
            "http://172.32.0.1/",
            "http://192.169.0.1/",
            "http://11.0.0.1/",
            "http://0.0.0.0/",
            "http://100.64.0.1/",
            "http://255.255.255.255/",
        ] {
            let error = check(url, false).expect_err(url);
            let message = error.to_string();
            assert!(message.contains("--allow-remote-llm"), "{message}");
            assert!(message.contains("cxrlake.allow_remote_llm"), "{message}");
        }
    }

    #[test]
    fn ipv6_loopback_ula_and_link_local_are_allowed() {
        for url in [
            "http://[::1]:8000/v1",
            "http://[fc00::1]/",
            "http://[fd12:3456:789a::1]/",
            "http://[fe80::1]/",
            "http://[febf::1]/",
            "http://[::ffff:10.1.2.3]/",
            "http://[::ffff:127.0.0.1]/",
        ] {
            assert!(check(url, false).is_ok(), "{url} should be allowed");
        }
    }

    #[test]
    fn public_ipv6_is_refused() {
        for url in [
            "http://[2001:4860:4860::8888]/",
            "http://[fec0::1]/",
            "http://[::]/",
            "http://[::ffff:8.8.8.8]/",
            "http://[fbff::1]/",
        ] {
            assert!(
                matches!(check(url, false), Err(LlmError::RemoteEndpoint { .. })),
                "{url} should be refused"
            );
        }
    }

    #[test]
    fn allow_remote_skips_the_check() {
        assert!(check("http://8.8.8.8/v1", true).is_ok());
        assert!(check("https://api.example.invalid/v1", true).is_ok());
    }

    #[test]
    fn localhost_is_resolved_and_allowed() {
        let url = Url::parse("http://localhost:8000/v1").expect("url");
        let (host, addresses) = checked_addresses(&url, false)
            .expect("localhost is loopback")
            .expect("a domain is resolved");
        assert_eq!(host, "localhost");
        assert!(addresses.iter().all(|address| address.ip().is_loopback()));
        assert!(addresses.iter().all(|address| address.port() == 8000));
    }

    #[test]
    fn unresolvable_host_is_refused() {
        let error = check("http://no-such-host.invalid/v1", false).expect_err("refused");
        assert!(error.to_string().contains("--allow-remote-llm"));
    }

    #[test]
    fn is_private_classifies_addresses() {
        assert!(is_private("127.0.0.1".parse().expect("ip")));
        assert!(is_private("172.20.1.1".parse().expect("ip")));
        assert!(!is_private("1.1.1.1".parse().expect("ip")));
        assert!(!is_private("2606:4700::1111".parse().expect("ip")));
    }
}

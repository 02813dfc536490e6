//! The clients' retry state: one retry policy (its state and budget) per
//! client, so a client that has exhausted its budget stays throttled for
//! every document it sends, as a real client library would.
//!
//! A document belongs to client `id % clients_per_tenant` of its tenant.
//! The lanes of one load (`lanes.rs`) share one `ClientPolicies`, so a
//! client's budget is one budget whichever lane sends its document.

use crate::experiment::ClientBehaviour;
use crate::load::workload::Document;
use retry_policy::RetryPolicy;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Every client's retry policy, created when the client first sends. Keyed
/// by tenant, then indexed by client, so a lookup borrows the tenant's name
/// instead of allocating a key. Cloned, it is the same clients.
#[derive(Clone, Default)]
pub struct ClientPolicies(Arc<Mutex<PoliciesByTenant>>);

/// Tenant name -> client index -> that client's policy, once it has sent.
/// foldhash, not the standard SipHash: the names come from the experiment
/// file, not from an adversary, and SipHash was about 270 instructions of
/// every attempt (measured with callgrind; BENCHMARKS.md, step 6).
type PoliciesByTenant = HashMap<String, Vec<Option<Arc<RetryPolicy>>>, foldhash::fast::FixedState>;

impl ClientPolicies {
    /// The retry policy of the client `doc` belongs to: its own state and
    /// budget, configured as `clients` configures its tenant's clients.
    pub(crate) fn policy(&self, clients: &ClientBehaviour, doc: &Document) -> Arc<RetryPolicy> {
        // Validated >= 1; the max keeps a hand-built behaviour from dividing by 0.
        let per_tenant = u64::from(clients.clients_per_tenant.max(1));
        let client = (doc.id % per_tenant) as usize;
        let mut policies = self.0.lock().expect("policies lock");
        if let Some(p) = policies
            .get(doc.tenant.as_str())
            .and_then(|c| c.get(client))
            .and_then(Option::as_ref)
        {
            return p.clone();
        }
        let (retry, _) = clients.for_tenant(&doc.tenant);
        let p = Arc::new(RetryPolicy::new(retry.clone()));
        let tenant_clients = policies.entry(doc.tenant.clone()).or_default();
        if tenant_clients.len() <= client {
            tenant_clients.resize(client + 1, None);
        }
        tenant_clients[client] = Some(p.clone());
        p
    }

    /// Clients that have sent so far.
    #[cfg(test)]
    fn clients(&self) -> usize {
        let policies = self.0.lock().unwrap();
        policies.values().flatten().filter(|p| p.is_some()).count()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::experiment::TenantClient;
    use retry_policy::RetryConfig;
    use std::time::Duration;

    /// `clients_per_tenant` clients per tenant, no retries and a 1-s timeout,
    /// except tenant t7's clients: 10 attempts and a 5-s timeout.
    pub(crate) fn behaviour(clients_per_tenant: u32) -> ClientBehaviour {
        let mut aggressive = RetryConfig::no_retries();
        aggressive.max_attempts = 10;
        let mut clients =
            ClientBehaviour::synchronous(RetryConfig::no_retries(), Duration::from_secs(1));
        clients.clients_per_tenant = clients_per_tenant;
        clients.tenants.insert(
            "t7".to_string(),
            TenantClient {
                retry: Some(aggressive),
                timeout: Some(Duration::from_secs(5)),
            },
        );
        clients
    }

    pub(crate) fn doc(id: u64, tenant: &str) -> Document {
        Document {
            id,
            tenant: tenant.into(),
            pages: 1,
            planned: Duration::ZERO,
            class: None,
        }
    }

    #[test]
    fn each_client_keeps_its_own_retry_state() {
        let clients = behaviour(3);
        let policies = ClientPolicies::default();
        // Documents 3 and 6 belong to client 0 of t1, document 4 to client 1.
        let a = policies.policy(&clients, &doc(3, "t1"));
        assert!(Arc::ptr_eq(&a, &policies.policy(&clients, &doc(6, "t1"))));
        assert!(!Arc::ptr_eq(&a, &policies.policy(&clients, &doc(4, "t1"))));
        // The same client index of another tenant is another client.
        assert!(!Arc::ptr_eq(&a, &policies.policy(&clients, &doc(3, "t2"))));
        assert_eq!(policies.clients(), 3);
        // One client per tenant, as before a population of clients.
        let one = behaviour(1);
        let policies = ClientPolicies::default();
        assert!(Arc::ptr_eq(
            &policies.policy(&one, &doc(3, "t1")),
            &policies.policy(&one, &doc(4, "t1"))
        ));
    }
}

//! `ZonePool`: one zone's pool as the gateway sees it, in this process or in
//! another (see `role`). The gateway and router only need to send a request
//! and know the zone's name; everything else (admin commands, metrics) is
//! dispatched by `System` on the two cases.

use crate::api::Reply;
use crate::pool::Pool;
use crate::remote_pool::RemotePool;
use std::sync::Arc;

#[derive(Clone)]
pub enum ZonePool {
    Local(Arc<Pool>),
    Remote(Arc<RemotePool>),
}

impl ZonePool {
    pub fn zone(&self) -> &str {
        match self {
            ZonePool::Local(p) => &p.zone,
            ZonePool::Remote(r) => &r.zone,
        }
    }

    pub async fn handle(&self, tenant: &str, doc: u64, pages: u32) -> Reply {
        match self {
            ZonePool::Local(p) => p.handle(tenant, doc, pages).await,
            ZonePool::Remote(r) => r.handle(tenant, doc, pages).await,
        }
    }

    pub fn local(&self) -> Option<&Arc<Pool>> {
        match self {
            ZonePool::Local(p) => Some(p),
            ZonePool::Remote(_) => None,
        }
    }

    pub fn remote(&self) -> Option<&Arc<RemotePool>> {
        match self {
            ZonePool::Local(_) => None,
            ZonePool::Remote(r) => Some(r),
        }
    }
}

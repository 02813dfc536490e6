//! The fault ledger's container records undone on a real engine: the
//! containers' side of `ledger.rs`, which cannot reach up here itself.

use super::ContainerImages;
use crate::env::docker;
use crate::env::ledger::tests::{CPUS, PAUSED};
use crate::env::ledger::Record;

/// A paused container with a CPU limit, recorded in the ledger format,
/// is unpaused and unlimited by the records' undo, called from inside a
/// runtime as a drop would; once it is gone, the undo says so. Skipped
/// without Docker or the Redis image, unless `HARNESS_REQUIRE_DOCKER=1`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_records_are_undone() {
    use testcontainers::core::WaitFor;
    use testcontainers::runners::AsyncRunner;
    use testcontainers::GenericImage;
    let image = ContainerImages::resolve(None, None).redis;
    if let Err(why) = super::check_these(&[&image]).await {
        assert!(
            std::env::var("HARNESS_REQUIRE_DOCKER").as_deref() != Ok("1"),
            "HARNESS_REQUIRE_DOCKER=1 but: {why}"
        );
        println!("SKIPPED: {why}");
        return;
    }
    let (name, tag) = super::split_image(&image);
    let c = GenericImage::new(name, tag)
        .with_wait_for(WaitFor::message_on_stdout("Ready to accept connections"))
        .start()
        .await
        .unwrap();
    let id = c.id().to_string();
    docker::update_cpus(&id, 0.5).await.unwrap();
    docker::pause(&id).await.unwrap();
    assert_eq!(
        docker::paused_and_nano_cpus(&id).await.unwrap(),
        (true, 500_000_000)
    );
    let record = |text: &str| -> Record { serde_json::from_str(&text.replace("ID", &id)).unwrap() };
    let done = [record(PAUSED).undo().unwrap(), record(CPUS).undo().unwrap()];
    assert_eq!(
        done,
        [
            format!("unpaused container pool-az1 ({id})"),
            format!("lifted the CPU limit of container pool-az1 ({id})")
        ]
    );
    // Unpaused. (Whether the engine lifts the limit on `--cpus 0` is the
    // engine's: Docker 20.10 keeps it, as `docker update --cpus 0` did.)
    assert!(!docker::paused_and_nano_cpus(&id).await.unwrap().0);
    c.rm().await.unwrap();
    assert_eq!(record(PAUSED).undo().unwrap(), "container pool-az1 is gone");
}

/// A containers variant's network record, as a SIGKILLed harness leaves
/// it (a network and containers named after it): its undo removes the
/// containers and the network, and says so; a second undo finds nothing.
/// Needs only the engine (the image is imported from a tar made here);
/// skipped without it, unless `HARNESS_REQUIRE_DOCKER=1`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variant_network_record_removes_its_containers_and_network() {
    if let Err(why) = docker::ping().await {
        assert!(
            std::env::var("HARNESS_REQUIRE_DOCKER").as_deref() != Ok("1"),
            "HARNESS_REQUIRE_DOCKER=1 but: {why}"
        );
        println!("SKIPPED: {why}");
        return;
    }
    let network = format!("overload-ledger-test-{}", std::process::id());
    docker::leave_variant(&network).await.unwrap();
    let left = docker::names_starting(&network).unwrap();
    assert_eq!(left.len(), 3, "{left:?}");
    let record = Record::DockerNetwork {
        network: network.clone(),
    };
    let done = record.undo().unwrap();
    assert!(done.contains("removed 2 container(s)"), "{done}");
    assert_eq!(
        docker::names_starting(&network).unwrap(),
        Vec::<String>::new()
    );
    let again = record.undo().unwrap();
    assert!(again.contains("nothing left"), "{again}");
    docker::remove_image("harness-ledger-test:latest").unwrap();
}

//! A driver in a HostProcess container: the same calls as through CSI
//! Proxy, served by the host itself where no proxy serves them.
//!
//! ```text
//! cargo run --example host_process --features host-process [-- --host]
//! ```
//!
//! With `--host` it uses the host alone (`Backend::Host`); without it,
//! whichever of CSI Proxy and the host is there (`Backend::Automatic`).
//! It makes and removes a directory under the kubelet directory, reads the
//! BIOS serial number and a service, and lists the disks' locations (none
//! under Wine, whose WMI knows no storage classes). On
//! Windows only: elsewhere it says why it cannot run. CI runs it under Wine
//! with `--host`.

use csi_proxy_client::{api::WindowsPath, ApiGroup, Backend, CsiProxy, Error, Result};

#[tokio::main]
async fn main() -> Result<()> {
    let backend = if std::env::args().any(|a| a == "--host") {
        Backend::Host
    } else {
        Backend::Automatic
    };
    let proxy = match CsiProxy::builder()
        .backend(backend)
        .groups([ApiGroup::Disk, ApiGroup::Filesystem, ApiGroup::System])
        .connect()
        .await
    {
        Err(Error::Configuration { reason, .. }) => {
            eprintln!("host_process: {reason}");
            return Ok(());
        }
        other => other?,
    };
    print!("{}", proxy.report());
    print!("{}", proxy.health());

    let fs = proxy.filesystem()?;
    let dir = WindowsPath::new(format!(
        r"C:\var\lib\kubelet\host-process-example-{}",
        std::process::id()
    ))?;
    fs.mkdir(&dir).await?;
    println!("made {dir}: exists = {}", fs.path_exists(&dir).await?);
    fs.rmdir(&dir, true).await?;
    println!("removed {dir}: exists = {}", fs.path_exists(&dir).await?);

    let system = proxy.system()?;
    println!(
        "BIOS serial number: {:?}",
        system.get_bios_serial_number().await?
    );
    // The WMI service: on every Windows host, and on Wine.
    let service = system.get_service("Winmgmt").await?;
    println!(
        "Winmgmt: {:?}, {:?}, {:?}",
        service.display_name, service.status, service.start_type
    );

    match proxy.disk()?.list_disk_locations().await {
        Ok(locations) => {
            println!("{} disks with a location", locations.len());
            for (disk, location) in locations {
                println!("disk {disk}: LUN {}", location.lun_id);
            }
        }
        // What a driver would answer its caller with.
        Err(error) => println!("disks: {error} (CSI code {:?})", error.csi_code()),
    }
    Ok(())
}

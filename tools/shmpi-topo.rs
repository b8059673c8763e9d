//! `shmpi-topo`: prints the node's topology as shmpi sees it (through
//! hwloc), and where `shmpi-bench` pins its two ranks by default.

use std::process::ExitCode;

fn main() -> ExitCode {
    match shmpi::topology::discover() {
        Ok(s) => {
            println!("packages:   {}", s.packages);
            println!("numa nodes: {}", s.numa_nodes);
            println!("l3 caches:  {}", s.l3_caches);
            println!("cores:      {}", s.cores);
            println!("pus:        {}", s.pus);
            let firsts: Vec<String> = s.core_first_pu.iter().map(|p| p.to_string()).collect();
            println!("first pu of each core: {}", firsts.join(","));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("shmpi-topo: {e}");
            ExitCode::from(1)
        }
    }
}

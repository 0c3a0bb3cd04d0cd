//! What building a request costs the client: a plain chat body beside one with images, so the
//! docs' figure (and a change to the image generator) is measured, not guessed.
//!   cargo bench -p yardstick-load --bench images

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use yardstick_load::images::{ImageSpec, for_request};
use yardstick_load::{Api, BodyOptions, Planner};

fn planner(images: Option<ImageSpec>) -> Planner {
    let sc = "D(100,100)".parse().unwrap();
    let opts = BodyOptions {
        stream: true,
        force_output: true,
    };
    let p = Planner::new(sc, "D(100,100)", Api::Chat, "m", 7, opts).unwrap();
    match images {
        Some(i) => p.with_images(i),
        None => p,
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("request");
    let plain = planner(None);
    let mut i = 0u64;
    g.bench_function("chat D(100,100)", |b| {
        b.iter(|| {
            i += 1;
            black_box(plain.request(i))
        })
    });
    for size in ["512x512", "1024x1024"] {
        let spec: ImageSpec = size.parse().unwrap();
        let p = planner(Some(spec));
        g.bench_function(format!("chat D(100,100) + image {size}"), |b| {
            b.iter(|| {
                i += 1;
                black_box(p.request(i))
            })
        });
        g.bench_function(format!("image {size} alone"), |b| {
            b.iter(|| {
                i += 1;
                black_box(for_request(&spec, 7, i))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

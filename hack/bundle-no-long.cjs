// Stands in for the `long` package in the bundle (hack/build.sh --alias:long=...). protobufjs uses
// Long for 64-bit integers when it can load it, and `long` compiles a small WebAssembly module as it
// loads, which brings V8's WebAssembly compilers into the daemon's resident memory for its whole life
// (~2 MiB). Without it protobufjs reads and writes 64-bit fields as numbers; drivers/supervisor
// converts them to decimal strings either way (toObject with longs: String), and no value the
// supervisor sends (sizes, timestamps) comes near 2^53.
module.exports = null;

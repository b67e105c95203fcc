#pragma once

#include <cstddef>

namespace edgetrain::net {

/** What a ring allreduce's work (apart from the wire) costs a device, as measured on it. */
struct ExchangeMeasurement
{
    // Wall seconds this device needs per byte of a ring round's chunk: sending it, receiving
    // the neighbour's and summing it (gloo's TCP transport, its copies and the reduction). On a
    // slow CPU, or one held to a quota, this bounds a round where the link does not.
    double seconds_per_byte = 0.0;
    std::size_t bytes = 0; // what each allreduce reduced
    int repeats = 0;       // allreduces timed
    double seconds = 0.0;  // how long measuring took
};

/**
 * One ring member's seconds per byte of chunk from a two-rank allreduce of `bytes` timed on
 * this device (`perAllreduce` wall seconds): each rank handled 2 (n - 1) / n x bytes = bytes of
 * chunks; the two shared min(2, cores) of CPU where one member of a real ring has min(1, cores)
 * (one thread). `cores`: the device's CPU quota in cores where it has one, else its processors
 * (<= 0: one).
 */
double ringMemberSecondsPerByte(double perAllreduce, std::size_t bytes, double cores);

/**
 * Times gloo's ring allreduce of `floats` floats between two ranks of this process over
 * loopback (threads, an in-memory rendezvous): each rank does a ring member's whole work per
 * round — send a chunk, receive one, add it — with no link to wait on. `cores` as for
 * ringMemberSecondsPerByte. Warms up, calibrates (allreduces for a sixth of `minSeconds`),
 * then times three windows planned at a third of `minSeconds` each (the number of allreduces
 * per window fixed from the calibration's mean, so nothing but allreduces is timed; a window
 * may run shorter or longer) and keeps the best window's mean: on a machine
 * other work shares (an edge lab's other devices profiling) the slower windows timed that work
 * too. Throws CollectiveError if the pair cannot connect or an allreduce fails.
 */
ExchangeMeasurement measureExchange(std::size_t floats, double cores, double minSeconds);

} // namespace edgetrain::net

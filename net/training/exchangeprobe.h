#pragma once

#include "net/training/collectives.h"

#include <cstddef>

namespace edgetrain::net {

/** What a ring allreduce's work (apart from the wire) costs a device, as measured on it. */
struct ExchangeMeasurement
{
    // Wall seconds this device needs per byte of a ring round's chunk: sending it, receiving
    // the neighbour's and summing it (gloo's TCP transport, its copies and the reduction). On a
    // slow CPU, or one held to a quota, this bounds a round where the link does not.
    double seconds_per_byte = 0.0;
    // Over the real path (measurePairExchange) only: this process's CPU seconds per byte of
    // chunk sent and one received over the timed windows — what the exchange keeps the device
    // busy (its TCP work, gloo's copies and the sum), per byte each way; 0 over loopback, where
    // both ranks are this process.
    double cpu_seconds_per_byte = 0.0;
    std::size_t bytes = 0; // what each allreduce reduced
    int repeats = 0;       // allreduces timed
    double seconds = 0.0;  // how long measuring took
    // Where that time went: connecting the two ranks; the rest (a warm-up allreduce, then the
    // windows).
    double setup_seconds = 0.0, windows_seconds = 0.0;
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
 * ringMemberSecondsPerByte. Warms up, then times three windows of a third of `minSeconds`
 * each (allreduces until the window has passed, at least two; the last float of the data
 * carries rank 0's word to stop, so nothing but allreduces is timed) and keeps the best
 * window's mean: on a machine other work shares (an edge lab's other devices profiling) the
 * slower windows timed that work too. Throws CollectiveError if the pair cannot connect or an
 * allreduce fails. (The last float carries the stop word; a sync step's allreduce has five
 * figures beyond the gradients, so the profile's size is the real one.)
 */
ExchangeMeasurement measureExchange(std::size_t floats, double cores, double minSeconds);

/**
 * Times gloo's allreduce of `floats` floats between two ranks over the real path: this device
 * and a partner elsewhere (the coordinator's rank, which does nothing else), met through
 * `store` (options.size is taken as 2; options.prefix must be the partner's). Each rank then
 * does a ring member's work per round over its own link — the wire, its CPU under its quota,
 * the network stack between — so rank 0's `seconds_per_byte` is what a ring round costs this
 * device per byte of chunk, whatever bounds it; a partner much faster than the device adds
 * little. Windows as measureExchange's (`minSeconds` for the three); rank 0 decides when each
 * ends, the other rank follows (its figures are 0). The partner's end is part of the figure:
 * on a slow link or a busy machine it caps it. Throws CollectiveError if the pair cannot
 * connect or an allreduce fails (the partner gone, a timeout).
 */
ExchangeMeasurement measurePairExchange(gloo::rendezvous::Store &store, GroupOptions options,
                                        std::size_t floats, double minSeconds);

} // namespace edgetrain::net

#include "net/training/collectives.h"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <csignal>
#include <mutex>

namespace edgetrain::net {

namespace {

template <typename Fn> void guarded(const char *what, const GroupOptions &o, Fn &&fn)
{
    try {
        fn();
    } catch (const gloo::IoException &e) {
        throw CollectiveError(std::string(what) + " failed on rank " + std::to_string(o.rank) +
                              " of " + std::to_string(o.size) + ": " + e.what());
    } catch (const gloo::Exception &e) {
        throw CollectiveError(std::string(what) + " failed on rank " + std::to_string(o.rank) +
                              ": " + e.what());
    } catch (const ::gloo::EnforceNotMet &e) {
        throw CollectiveError(std::string(what) + ": " + e.what());
    }
}

} // namespace

CollectiveGroup::CollectiveGroup(gloo::rendezvous::Store &store, const GroupOptions &options)
    : m_options(options)
{
    // gloo writes to its peers' sockets with plain writev(): a peer that dies mid-collective
    // would end this whole process with SIGPIPE (tst_collectives' silent peer did, once in a
    // full ctest run) instead of a CollectiveError the survivors report. The signal is ignored once
    // for the process, so a closed socket is an error (EPIPE) like any other.
    static std::once_flag ignorePipe;
    std::call_once(ignorePipe, [] { std::signal(SIGPIPE, SIG_IGN); });
    if (options.size < 1 || options.rank < 0 || options.rank >= options.size)
        throw CollectiveError("rank " + std::to_string(options.rank) + " is outside a group of " +
                              std::to_string(options.size));
    guarded("connecting the group", m_options, [&] {
        gloo::transport::tcp::attr attr;
        attr.hostname = options.hostname;
        auto device = gloo::transport::tcp::CreateDevice(attr);
        auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.size);
        context->setTimeout(options.timeout);
        gloo::rendezvous::PrefixStore prefixed(options.prefix, store);
        context->connectFullMesh(prefixed, device);
        m_context = std::move(context);
    });
}

CollectiveGroup::~CollectiveGroup() = default;

namespace {

/** gloo's ring allreduce summing `count` values of T in place. */
template <typename T>
void ringSum(const std::shared_ptr<gloo::Context> &context, const GroupOptions &o, T *data,
             std::size_t count)
{
    if (o.size == 1 || count == 0)
        return;
    guarded("allreduce", o, [&] {
        gloo::AllreduceOptions opts(context);
        opts.setOutput(data, count);
        opts.setReduceFunction(
            static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::sum<T>));
        opts.setTimeout(o.timeout);
        gloo::allreduce(opts);
    });
}

} // namespace

void CollectiveGroup::allreduceSum(float *data, std::size_t count)
{
    ringSum(m_context, m_options, data, count);
}

void CollectiveGroup::allreduceSum(double *data, std::size_t count)
{
    ringSum(m_context, m_options, data, count);
}

void CollectiveGroup::broadcast(float *data, std::size_t count, int root)
{
    if (m_options.size == 1 || count == 0)
        return;
    guarded("broadcast", m_options, [&] {
        gloo::BroadcastOptions opts(m_context);
        opts.setOutput(data, count);
        opts.setRoot(root);
        opts.setTimeout(m_options.timeout);
        gloo::broadcast(opts);
    });
}

void CollectiveGroup::barrier()
{
    if (m_options.size == 1)
        return;
    guarded("barrier", m_options, [&] {
        gloo::BarrierOptions opts(m_context);
        opts.setTimeout(m_options.timeout);
        gloo::barrier(opts);
    });
}

} // namespace edgetrain::net

#pragma once

#include "core/error.h"

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

namespace gloo {
class Context;
namespace rendezvous {
class Store;
}
} // namespace gloo

namespace edgetrain::net {

/** A collective failed: a peer died, the network broke or a timeout passed. The group cannot be
 *  used any more; build a new one (with a new prefix) from the survivors. */
class CollectiveError : public core::Error
{
public:
    using core::Error::Error;
};

/** One group of ranks (gloo's style: an options object, then the calls). */
struct GroupOptions
{
    int rank = 0;
    int size = 1;
    std::string hostname = "127.0.0.1"; // where this rank's endpoint listens
    std::chrono::milliseconds timeout{10000};
    std::string prefix = "group-0"; // rendezvous namespace: one per group generation
};

/**
 * The data plane between training ranks: a full TCP mesh built by gloo through a rendezvous
 * store (in the cluster, the coordinator hosts it over the control channel; in tests, a
 * HashStore shared by threads), and the collectives training needs. Blocking calls on the
 * calling thread; every rank must make the same calls in the same order.
 */
class CollectiveGroup
{
public:
    /** Connects the mesh; throws CollectiveError if the peers do not all arrive in time. */
    CollectiveGroup(gloo::rendezvous::Store &store, const GroupOptions &options);
    ~CollectiveGroup();
    CollectiveGroup(const CollectiveGroup &) = delete;
    CollectiveGroup &operator=(const CollectiveGroup &) = delete;

    int rank() const { return m_options.rank; }
    int size() const { return m_options.size; }

    /** In place: data[i] = sum over ranks (gloo's ring allreduce). */
    void allreduceSum(float *data, std::size_t count);
    /** The same in double (a tile team's batch-norm moments and sums). */
    void allreduceSum(double *data, std::size_t count);
    /** In place: data = root's data. */
    void broadcast(float *data, std::size_t count, int root);
    void barrier();

private:
    GroupOptions m_options;
    std::shared_ptr<gloo::Context> m_context;
};

} // namespace edgetrain::net

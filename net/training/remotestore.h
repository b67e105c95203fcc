#pragma once

#include "net/protocol/messages/storerequest.h"
#include "net/training/joblink.h"

#include <gloo/rendezvous/store.h>

namespace edgetrain::net {

/**
 * gloo's rendezvous store, hosted by the coordinator and reached over the control channel: the
 * nodes need no shared file system and no store of their own. Blocking, as gloo expects; a
 * missing key or a lost coordinator surfaces as gloo::IoException, which the collectives turn
 * into CollectiveError.
 */
class RemoteStore : public gloo::rendezvous::Store
{
public:
    RemoteStore(JobLink &link, std::chrono::milliseconds timeout) : m_link(link), m_timeout(timeout)
    {}

    void set(const std::string &key, const std::vector<char> &data) override;
    std::vector<char> get(const std::string &key) override;
    void wait(const std::vector<std::string> &keys) override { wait(keys, m_timeout); }
    void wait(const std::vector<std::string> &keys,
              const std::chrono::milliseconds &timeout) override;

private:
    /** Sends `request` with `timeout` as its deadline; its reply, or gloo::IoException. */
    StoreReply call(StoreRequest request, std::chrono::milliseconds timeout);

    JobLink &m_link;
    std::chrono::milliseconds m_timeout;
};

} // namespace edgetrain::net

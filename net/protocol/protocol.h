#pragma once

#include <QLatin1String>

namespace edgetrain::net {

/**
 * The control protocol's vocabulary: every message type a frame (frame.h) carries, and the
 * actions the coordinator answers a worker's requests with. Both ends name them from here, so a
 * reader sees the whole protocol in one place and a typo is a compile error, not a message that
 * nobody handles. Each body is a struct in net/protocol/messages/ with its own CBOR read and
 * write (named beside each type below); nothing else spells a field's name.
 */
namespace Message {
// Handshake (controlclient.cpp ↔ nodeserver.cpp): the client's nonce (Hello), the node's
// challenge (Challenge), the client's proof of the cluster key (Auth), the node's facts once the
// key is proven (NodeInfo::withCapabilities); a stranger's frames are answered with `refused`
// (Refused). messages/handshake.h, messages/nodeinfo.h.
inline constexpr QLatin1String Hello{"hello"};
inline constexpr QLatin1String Challenge{"challenge"};
inline constexpr QLatin1String Auth{"auth"};
inline constexpr QLatin1String Welcome{"welcome"};
inline constexpr QLatin1String Refused{"refused"};
// Session upkeep: liveness (a pong echoes its ping's body), and the node's once-a-second
// readings (SystemSample, messages/systemsample.h); `error` answers a type the node does not know
// (Failure).
inline constexpr QLatin1String Ping{"ping"};
inline constexpr QLatin1String Pong{"pong"};
inline constexpr QLatin1String Subscribe{"subscribe"};
inline constexpr QLatin1String Unsubscribe{"unsubscribe"};
inline constexpr QLatin1String Metrics{"metrics"};
inline constexpr QLatin1String Error{"error"};
// A job (coordinator → node): shipped data first (ShipmentChunk), then the JobSpec; the node
// accepts (Receipt) or refuses (Failure) each; `stop` (no body) ends the job; `reply` answers a
// worker's request (JobLink; TrainingReply, WeightsReply, StoreReply, ExchangeProbeReply, each
// with its RequestId). messages/jobspec.h, shipmentchunk.h, coordinatorreplies.h.
inline constexpr QLatin1String DataChunk{"data_chunk"};
inline constexpr QLatin1String DataReceived{"data_received"};
inline constexpr QLatin1String DataRefused{"data_refused"};
inline constexpr QLatin1String Job{"job"};
inline constexpr QLatin1String JobAccepted{"job_accepted"};
inline constexpr QLatin1String JobRefused{"job_refused"};
inline constexpr QLatin1String Stop{"stop"};
inline constexpr QLatin1String Reply{"reply"};
// The worker (node → coordinator, through JobLink): ready to join (JobReady), progress
// (TrainingStatus), the end of each epoch and its validation (EpochDone, EpochEval), the
// parameter server's pull (no body) and push (GradientPush), the collectives' key-value store
// (StoreRequest), the model, the last epoch's and the best one's (WeightsChunk), the end of the
// job (JobDone, Failure). messages/workermessages.h, trainingstatus.h, storerequest.h.
inline constexpr QLatin1String JobReady{"job_ready"};
inline constexpr QLatin1String Progress{"progress"};
inline constexpr QLatin1String EpochDone{"epoch_done"};
inline constexpr QLatin1String EpochEval{"epoch_eval"};
inline constexpr QLatin1String PsPull{"ps_pull"};
inline constexpr QLatin1String PsPush{"ps_push"};
inline constexpr QLatin1String StoreSet{"store_set"};
inline constexpr QLatin1String StoreGet{"store_get"};
inline constexpr QLatin1String StoreWait{"store_wait"};
// A profile asks the coordinator to host the other rank of a two-rank allreduce it times over
// its link (the job's exchange_probe; ExchangeProbeRequest); the reply comes at once
// (ExchangeProbeReply: the rank is queued, or why not). How the rank fared the coordinator logs.
inline constexpr QLatin1String ExchangeProbe{"exchange_probe"};
inline constexpr QLatin1String CollectiveFailed{"collective_failed"};
inline constexpr QLatin1String Weights{"weights"};
inline constexpr QLatin1String BestWeights{"best_weights"};
inline constexpr QLatin1String JobDone{"job_done"};
inline constexpr QLatin1String JobFailed{"job_failed"};
// A deployment (coordinator → node): the model file in chunks (DeployModel), then its start
// (DeployStart); the node refuses either (Failure as deploy_refused: the model failed a check,
// no camera, busy) or accepts the start (DeployAccepted) and reports about once a second
// (DeployReport); deploy_stop (no body) ends it and the node confirms with deploy_stopped (no
// body); deploy_failed (Failure) says the run broke on the node. messages/deploymessages.h.
inline constexpr QLatin1String DeployModel{"deploy_model"};
inline constexpr QLatin1String DeployStart{"deploy_start"};
inline constexpr QLatin1String DeployAccepted{"deploy_accepted"};
inline constexpr QLatin1String DeployRefused{"deploy_refused"};
inline constexpr QLatin1String DeployReport{"deploy_report"};
inline constexpr QLatin1String DeployStop{"deploy_stop"};
inline constexpr QLatin1String DeployStopped{"deploy_stopped"};
inline constexpr QLatin1String DeployFailed{"deploy_failed"};
} // namespace Message

} // namespace edgetrain::net

// libFuzzer target for what an authenticated peer's messages carry (net/protocol/messages): the
// CBOR bodies of jobs, groups and everything else a worker and its coordinator exchange, node
// announcements (beacons and probe answers: these come from anyone), metrics,
// training status, dataset shipments chunk by chunk (checksummed here, as a peer with the key
// would), and async gradient pushes as the coordinator's parameter server reads and applies them
// (bfloat16 or float32, to a tiny model), the collectives' rendezvous requests (store_set,
// store_get, store_wait) as the coordinator reads them, and a deployment's bodies (the model's
// chunks and start as a node reads them, its answer, reports and failures as the coordinator
// does). Each parser returns its value or refuses with a message; none may crash, read out of
// bounds or hit undefined behaviour.
//
//   build/fuzz/bin/fuzz_messages -max_total_time=300 /tmp/corpus-messages
//   tests/fuzz/corpus/messages

#include "core/json.h"
#include "core/modelspec.h"
#include "core/sgd.h"
#include "net/protocol/messages/coordinatorreplies.h"
#include "net/protocol/messages/deploymessages.h"
#include "net/protocol/messages/jobspec.h"
#include "net/protocol/messages/nodeinfo.h"
#include "net/protocol/messages/storerequest.h"
#include "net/protocol/messages/systemsample.h"
#include "net/protocol/messages/trainingstatus.h"
#include "net/protocol/messages/workermessages.h"
#include "net/protocol/protocol.h"
#include "net/training/parameterserver.h"
#include "net/training/shipment.h"

#include <QCborArray>
#include <QCborMap>
#include <QCborValue>
#include <QCryptographicHash>

#include <cstddef>
#include <cstdint>

using namespace edgetrain::net;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    if (size == 0)
        return 0;
    // As the frame decoder and the datagram readers do: bytes that do not decode go no further
    // (Qt 6.4's half-built map of a truncated one reads past its end on lookups).
    QCborParserError parseError;
    const QCborValue value = QCborValue::fromCbor(
        QByteArray::fromRawData(reinterpret_cast<const char *>(data + 1), qsizetype(size - 1)),
        &parseError);
    if (parseError.error != QCborError::NoError)
        return 0;
    QString error;
    switch (data[0] % 8) {
    case 0:
        (void)JobSpec::fromCbor(value.toMap(), &error);
        break;
    case 1: // a group, or (the selector's higher bits) another body of the job's exchange or
            // of a deployment's
        switch ((data[0] / 8) % 16) {
        case 0:
            (void)GroupSpec::fromCbor(value.toMap(), &error);
            break;
        case 1:
            (void)JobReady::fromCbor(value.toMap(), &error);
            break;
        case 2:
            (void)EpochDone::fromCbor(value.toMap(), &error);
            break;
        case 3:
            (void)EpochEval::fromCbor(value.toMap(), &error);
            break;
        case 4:
            (void)GradientPush::fromCbor(value.toMap(), &error);
            break;
        case 5:
            (void)ExchangeProbeRequest::fromCbor(value.toMap(), &error);
            break;
        case 6:
            (void)WeightsChunk::fromCbor(value.toMap(), &error);
            break;
        case 7:
            (void)CollectiveFailed::fromCbor(value.toMap(), &error);
            break;
        case 8:
            (void)JobDone::fromCbor(value.toMap(), &error);
            break;
        case 9:
            (void)TrainingReply::fromCbor(value.toMap(), &error);
            break;
        case 10:
            (void)WeightsReply::fromCbor(value.toMap(), &error);
            break;
        case 11:
            (void)DeployModel::fromCbor(value.toMap(), &error);
            break;
        case 12:
            (void)DeployStart::fromCbor(value.toMap(), &error);
            break;
        case 13:
            (void)DeployAccepted::fromCbor(value.toMap(), &error);
            break;
        case 14: {
            const auto report = DeployReport::fromCbor(value.toMap(), &error);
            if (report)
                (void)report->jpeg.size();
            break;
        }
        case 15: // deploy_refused, deploy_failed
            (void)Failure::fromCbor(value.toMap());
            break;
        }
        break;
    case 2:
        (void)NodeInfo::fromCbor(value.toMap());
        break;
    case 3:
        (void)SystemSample::fromCbor(value.toMap());
        break;
    case 4:
        (void)TrainingStatus::fromCbor(value.toMap());
        break;
    case 5: { // a shipment: an array of chunks, as they would arrive one message each
        ShipmentAssembler shipment;
        for (const QCborValue &chunk : value.toArray()) {
            // A peer that has the key can checksum what it sends: the fuzzer's chunks are
            // checksummed too, so that they reach the header and the assembly.
            ShipmentChunk checksummed = ShipmentChunk::fromCbor(chunk.toMap());
            checksummed.sha256 =
                QCryptographicHash::hash(checksummed.data, QCryptographicHash::Sha256);
            if (!shipment.add(checksummed.toCbor(), &error))
                break;
            if (shipment.complete()) {
                try {
                    (void)shipment.take();
                } catch (const std::exception &) {
                }
                break;
            }
        }
        break;
    }
    case 6: { // a gradient push to a parameter server of a 3 -> 2 linear model (8 values)
        static ParameterServer server(
            edgetrain::core::ModelSpec::fromJson(edgetrain::core::Json::parse(
                R"({"name": "tiny", "input": [3], "stages": [
                    {"type": "linear", "out_features": 2}]})")),
            1, edgetrain::core::SgdOptions{}, 2, 4);
        static bool added = false;
        if (!added) {
            server.addWorker(0);
            server.setMaxRate(1.0);
            added = true;
        }
        const auto body = GradientPush::fromCbor(value.toMap(), &error);
        std::vector<float> push;
        if (body && readPush(*body, server.gradientSize(),
                             server.pushSize() - server.gradientSize(), push)) {
            const auto p = server.push(0, std::uint64_t(body->version), push.data(), push.size(),
                                       body->lr, body->count);
            (void)p;
            (void)server.delta(0);
        }
        break;
    }
    case 7: { // a rendezvous request: the selector's higher bits pick set, get or wait
        static const QLatin1String types[] = {Message::StoreSet, Message::StoreGet,
                                              Message::StoreWait};
        const auto r = StoreRequest::fromCbor(types[(data[0] / 8) % 3], value.toMap(), &error);
        if (r)
            (void)r->keys.size();
        break;
    }
    }
    return 0;
}

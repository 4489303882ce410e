/**
 * @file kdc/export.h
 * @brief KDC_EXPORT: the only way a libkdc symbol becomes visible.
 *
 * libkdc is built with -fvisibility=hidden (CMake C_VISIBILITY_PRESET
 * hidden); a function is part of the ABI only if its declaration carries
 * KDC_EXPORT. KDC_BUILDING is defined only while libkdc itself compiles.
 */
#ifndef KDC_EXPORT_H
#define KDC_EXPORT_H

#if defined(_WIN32) || defined(__CYGWIN__)
#  if defined(KDC_BUILDING)
#    define KDC_EXPORT __declspec(dllexport)
#  else
#    define KDC_EXPORT __declspec(dllimport)
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define KDC_EXPORT __attribute__((visibility("default")))
#else
#  define KDC_EXPORT
#endif

/*
 * KDC_CONTRACT(meaning): what a public function means to kdc's durability
 * contract, declared beside it so that kdc-lint reads it from the parsed
 * header (clang's annotate attribute) and its model of libkdc cannot drift
 * from the library, however the header was included (-I or -isystem).
 * Other compilers see nothing. The meaning is one word, then the argument
 * positions (from 0) kdc-lint needs, e.g. "commit-message handle=0" (varargs = the
 * first RD_KAFKA_V_* argument of a producev-style call):
 *
 *   produce            enqueues an output message (handle = producer,
 *                      topic = topic name); its delivery is confirmed later
 *   produce-confirmed  produces and returns once its delivery report arrived
 *   dlq-route          routes a consumed message to the dead-letter queue and
 *                      returns once that delivery was confirmed
 *   dlq-produce        produces a consumed message to the dead-letter queue; its
 *                      delivery is confirmed later (through a tracker)
 *   confirm            waits for delivery reports (handle = producer)
 *   commit-message     commits a consumed message's offset (handle = consumer)
 *   commit-done        commits only offsets marked done (handle = consumer,
 *                      list = the object holding them)
 *   mark-done          marks a consumed message's effect done (list = the
 *                      object a commit-done then commits it from)
 *   track              registers work in flight (nothing is committed)
 *   classify           classifies a failure (poison or transient)
 *   rebalance          serves a rebalance (an assignment's epochs)
 *   delivery-callback  a delivery-report callback to register
 *   rewind             seeks back to committed offsets (nothing is committed)
 *   retry              hands back or ends a failed message's retry (pauses
 *                      or resumes its partition; nothing is committed)
 *   txn                a transactional step
 *   create, destroy, configure, query, decode
 *                      none of the above: no message produced, confirmed or
 *                      committed
 */
#if defined(__clang__)
#define KDC_CONTRACT(meaning) __attribute__((annotate("kdc.contract:" meaning)))
#else
#define KDC_CONTRACT(meaning)
#endif

#endif /* KDC_EXPORT_H */

/* kdc_strerror(): text for the libkdc error codes. */
#include <kdc/error.h>

const char *kdc_strerror(int err) {
        switch ((kdc_err_t)err) {
        case KDC_OK:
                return "Success";
        case KDC_ERR_INVALID:
                return "Invalid argument";
        case KDC_ERR_NOMEM:
                return "Out of memory";
        case KDC_ERR_TIMEOUT:
                return "Timed out before every delivery report arrived";
        case KDC_ERR_DELIVERY:
                return "At least one message was not delivered";
        case KDC_ERR_QUEUE_FULL:
                return "Producer queue stayed full until the deadline";
        case KDC_ERR_PRODUCE:
                return "Producer refused the message";
        case KDC_ERR_COMMIT:
                return "Offset commit failed";
        case KDC_ERR_BUSY:
                return "Messages are still awaiting delivery reports";
        case KDC_ERR_CONF:
                return "Producer has no delivery report callback for libkdc";
        case KDC_ERR_STALE:
                return "Assignment epoch was revoked or lost";
        case KDC_ERR_MALFORMED:
                return "Malformed input";
        case KDC_ERR_NOENT:
                return "No such entry";
        case KDC_ERR_ASSIGN:
                return "Partitions could not be (un)assigned";
        case KDC_ERR_IO:
                return "File could not be written";
        }
        return "Unknown kdc error code";
}

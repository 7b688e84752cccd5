/*
 * tls: the TLS listener's context.  See tls.h.
 */
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>

#include <openssl/err.h>

#include "config.h"

/*
 * The id of the sessions this context makes.  With client certificates,
 * OpenSSL fails every resumption ("session id context uninitialized")
 * unless the context has one, lest a session verified elsewhere resume
 * here; with one context per process (and its own ticket keys), a
 * constant tells enough.
 */
#define TLS_SESSION_ID_CONTEXT "nddd"

static char *
tls_error(const char *what, const char *path)
{
	char buf[256], *cause;

	ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
	if (asprintf(&cause, "TLS: %s %s: %s", what, path ? path : "",
	    buf) == -1)
		return NULL;
	return cause;
}

SSL_CTX *
tls_context_new(const struct config *cfg, char **cause)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL) {
		*cause = tls_error("cannot create a context", NULL);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert) != 1) {
		*cause = tls_error("cannot load the certificate", cfg->tls_cert);
		goto err;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key,
	    SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
		*cause = tls_error("cannot load the key", cfg->tls_key);
		goto err;
	}
	if (cfg->tls_client_ca != NULL) {
		STACK_OF(X509_NAME) *names;

		if (SSL_CTX_load_verify_locations(ctx, cfg->tls_client_ca,
		    NULL) != 1 || (names = SSL_load_client_CA_file(
		    cfg->tls_client_ca)) == NULL) {
			*cause = tls_error("cannot load the client CA",
			    cfg->tls_client_ca);
			goto err;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER |
		    SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
		if (SSL_CTX_set_session_id_context(ctx, (const unsigned char *)
		    TLS_SESSION_ID_CONTEXT, sizeof(TLS_SESSION_ID_CONTEXT) -
		    1) != 1) {
			*cause = tls_error("cannot set the session id context",
			    NULL);
			goto err;
		}
	}
	return ctx;
err:
	SSL_CTX_free(ctx);
	return NULL;
}

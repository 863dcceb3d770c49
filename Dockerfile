# syntax=docker/dockerfile:1
# The lhcnp image: one static binary (every role is a subcommand: switch,
# collector, tuner, lab, migrate) with the scenarios, examples and deploy
# files the compose lab reads. docker-compose.yml builds it; docs/lab.md
# ("docker compose") describes the services.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/lhcnp ./cmd/lhcnp \
 && mkdir -p /out/state/collector /out/state/lab

# Small final image: no shell, no package manager, user nonroot (65532).
# Healthchecks use the binary itself (lhcnp lab probe).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/lhcnp /usr/local/bin/lhcnp
COPY --from=build --chown=65532:65532 /out/state /var/lib/lhcnp
COPY scenarios /usr/share/lhcnp/scenarios
COPY examples /usr/share/lhcnp/examples
COPY deploy /usr/share/lhcnp/deploy
USER nonroot:nonroot
WORKDIR /var/lib/lhcnp
ENTRYPOINT ["/usr/local/bin/lhcnp"]
CMD ["--help"]

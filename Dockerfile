# syntax=docker/dockerfile:1
# Multi-stage build of a static hookrun binary that runs as a non-root user.
# (Production image; the tests never build it: there is no registry here.)
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/hookrun ./cmd/hookrun \
 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/hookrun-step-init ./cmd/hookrun-step-init

FROM alpine:3.20
# git: workspaces are checked out from a mirror cache; sh: host steps.
RUN apk add --no-cache git ca-certificates \
 && adduser -D -H -u 10001 hookrun \
 && mkdir -p /var/lib/hookrun && chown hookrun /var/lib/hookrun
COPY --from=build /out/hookrun /out/hookrun-step-init /usr/local/bin/
# As uid 10001 hookrun refuses host steps (runner.host_steps: isolated needs
# root and CAP_SYS_ADMIN to run them as an unprivileged user of their own):
# run steps in containers or sbx, or see docs/operations.md#host-steps.
USER 10001
WORKDIR /var/lib/hookrun
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/hookrun"]
CMD ["serve", "--config", "/etc/hookrun/hookrun.yaml"]

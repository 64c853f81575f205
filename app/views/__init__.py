"""The app's pages, one Streamlit script each (registered by `app/main.py`)."""

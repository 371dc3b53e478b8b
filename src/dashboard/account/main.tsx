// The account bundle's entry: mounts the app on #app.
import { render } from 'preact';
import { App } from './app.tsx';
import '../ui/style.css';

const root = document.getElementById('app');
if (root) render(<App />, root);
